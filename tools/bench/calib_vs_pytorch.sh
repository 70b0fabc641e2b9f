#!/usr/bin/env bash
# shellcheck disable=SC2059  # printf "$fmt": the row format is defined once, below
# Times qfuse calibration against PyTorch FX post-training calibration on the same
# models, the same samples (the first 512 Fashion-MNIST training images, pixel/255),
# the same batch size (32) and the same thread count (2), and prints a table.
#
#   bash tools/bench/calib_vs_pytorch.sh
#
# For each sample model it alternates qfuse and PyTorch runs, RUNS times each, every
# run a fresh process:
#   qfuse:   bazel-bin/tools/calibrate --model=models/<m>/model.onnx --calib_samples=512
#              --method=$METHOD --threads=2 --batch_size=32
#            (its own timer: executor setup + forward passes + histograms + thresholds;
#            loading and fusing the model is outside it)
#   PyTorch: tools/bench/pytorch_calibration.py --model=<m> --samples=512 --batch=32
#              --threads=2
#            (prepare_fx, the calibration loop and convert_fx timed separately; the
#            table's "PyTorch" columns are the calibration loop, "+convert" adds
#            convert_fx, where HistogramObserver computes its qparams)
#
# Environment: RUNS (3), METHOD (auto, the tool's default; entropy is TensorRT's KL search
# alone), MODELS ("resnet_small mobilenetv2_small"), SAMPLES (512),
# BATCH (32), THREADS (2), PYTHON (/usr/bin/python3), LOG_DIR (a new temp dir; the
# full output of every run is kept there), PT_OMP_WAIT_POLICY (PASSIVE; "default"
# leaves OMP_WAIT_POLICY as it is: see pytorch_calibration.py for why).
# Needs torch/onnx/numpy for PYTHON (bash models/setup_python.sh) and Bazel.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
RUNS="${RUNS:-3}"
METHOD="${METHOD:-auto}"
MODELS="${MODELS:-resnet_small mobilenetv2_small}"
SAMPLES="${SAMPLES:-512}"
BATCH="${BATCH:-32}"
THREADS="${THREADS:-2}"
PYTHON="${PYTHON:-/usr/bin/python3}"
PT_OMP_WAIT_POLICY="${PT_OMP_WAIT_POLICY:-PASSIVE}"
LOG_DIR="${LOG_DIR:-$(mktemp -d /tmp/calib_vs_pytorch.XXXXXX)}"
mkdir -p "$LOG_DIR"

if ! "$PYTHON" -c 'import torch, onnx, numpy' 2>/dev/null; then
  echo "error: $PYTHON cannot import torch/onnx/numpy (run: bash models/setup_python.sh)" >&2
  exit 1
fi

echo "== building //tools:calibrate"
bazel build //tools:calibrate
CALIBRATE=bazel-bin/tools/calibrate

pt_env=()
if [[ "$PT_OMP_WAIT_POLICY" != default ]]; then pt_env=(env "OMP_WAIT_POLICY=$PT_OMP_WAIT_POLICY"); fi

# Prints "best median" of its numeric arguments.
best_median() {
  printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1}
    END {m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.3f %.3f\n", a[1], m}'
}
# field KEY FILE: value of KEY=... on the RESULT line of FILE.
field() { sed -n "s/^RESULT .*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" "$2"; }

echo "== $(date -Is) $(uname -n), $(nproc) cores; logs in $LOG_DIR"
# Other engineers rebuild the same tree: record which binary and tree were measured.
echo "== qfuse $CALIBRATE sha256 $(sha256sum "$CALIBRATE" | cut -c1-16), built $(date -r "$CALIBRATE" -Is);" \
  "git HEAD $(git rev-parse --short HEAD 2>/dev/null || echo '?')," \
  "$(git status --porcelain 2>/dev/null | wc -l) uncommitted paths"
echo "== $("$PYTHON" -c 'import torch; print("torch", torch.__version__, "engines", torch.backends.quantized.supported_engines)')"
echo "== load before: $(uptime)"
rows=()
fmt="%-18s %5s %7s %7s %6s %7s %7s %8s %7s %6s %7s %6s %6s\n"  # table row format
for model in $MODELS; do
  q_times=(); p_times=(); p_conv=(); p_fp32=()
  q_tensors="?"; q_rss="?"; p_obs="?"; p_rss="?"
  for run in $(seq 1 "$RUNS"); do
    qlog="$LOG_DIR/${model}.qfuse.$run.log"
    "$CALIBRATE" --model="models/$model/model.onnx" --calib_samples="$SAMPLES" --method="$METHOD" \
      --threads="$THREADS" --batch_size="$BATCH" >"$qlog" 2>&1
    line=$(grep '^calibrated ' "$qlog")
    q_times+=("$(sed -n 's/.* in \([0-9.]*\) s (.*/\1/p' <<<"$line")")
    q_tensors=$(sed -n 's/^calibrated \([0-9]*\) tensors.*/\1/p' <<<"$line")
    q_rss=$(sed -n 's/.*process peak RSS \([0-9.]*\) MiB.*/\1/p' "$qlog")

    plog="$LOG_DIR/${model}.pytorch.$run.log"
    ${pt_env[@]+"${pt_env[@]}"} "$PYTHON" tools/bench/pytorch_calibration.py --model="$model" \
      --samples="$SAMPLES" --batch="$BATCH" --threads="$THREADS" >"$plog" 2>&1
    calib=$(field calib_s "$plog"); conv=$(field convert_s "$plog")
    p_times+=("$calib")
    p_conv+=("$(awk -v a="$calib" -v b="$conv" 'BEGIN {printf "%.4f", a + b}')")
    p_fp32+=("$(field fp32_fwd_s "$plog")")
    p_obs=$(field act_observers "$plog"); p_rss=$(field peak_rss_mib "$plog")
    printf '  %-18s run %d: qfuse %7s s   PyTorch calib %7s s, +convert %7s s, fused fp32 fwd %7s s   (load %s)\n' \
      "$model" "$run" "${q_times[-1]}" "$calib" "${p_conv[-1]}" "${p_fp32[-1]}" \
      "$(cut -d' ' -f1-3 /proc/loadavg)"
  done
  read -r q_best q_med <<<"$(best_median "${q_times[@]}")"
  read -r p_best p_med <<<"$(best_median "${p_times[@]}")"
  read -r _ pc_med <<<"$(best_median "${p_conv[@]}")"
  read -r _ pf_med <<<"$(best_median "${p_fp32[@]}")"
  ratio=$(awk -v p="$p_med" -v q="$q_med" 'BEGIN {printf "%.2f", p / q}')
  ratio_c=$(awk -v p="$pc_med" -v q="$q_med" 'BEGIN {printf "%.2f", p / q}')
  rows+=("$(printf "$fmt" "$model" "$q_tensors" "$q_best" "$q_med" "$p_obs" "$p_best" "$p_med" \
    "$pc_med" "$pf_med" "$ratio" "$ratio_c" "$q_rss" "$p_rss")")
done
echo "== load after:  $(uptime)"
echo
echo "calibration of $SAMPLES samples (qfuse --method=$METHOD), batch $BATCH, $THREADS threads: seconds, best and median of $RUNS runs"
echo "  q.*: qfuse (obs = observed tensors); pt.*: PyTorch FX calibration loop (obs = HistogramObservers),"
echo "  pt.+conv: median of loop + convert_fx; pt.fp32: fused float forward of the same batches, no observers"
echo "  ratio = pt.med / q.med, ratio+c = pt.+conv / q.med (> 1: qfuse faster); RSS: process peak MiB"
echo "  PyTorch OMP_WAIT_POLICY=$PT_OMP_WAIT_POLICY"
printf "$fmt" model q.obs q.best q.med pt.obs pt.best pt.med pt.+conv pt.fp32 ratio ratio+c q.RSS pt.RSS
printf '%s\n' "${rows[@]}"
