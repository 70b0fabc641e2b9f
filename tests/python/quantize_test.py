"""The Python module against the CLI: qfuse.quantize fed 64 Fashion-MNIST images one dict at a
time from a generator writes the same bytes as //tools:quantize reading them from an .npy file;
qfuse.Session reproduces //tools:run's outputs bit for bit; qfuse.compare reproduces the
quantize result's numbers; errors arrive as the documented Python exceptions.

Run by tests/python/run_python_test.sh with the runfiles paths of the two CLIs and the model.
"""
import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys
import unittest

import qfuse

FASHION_MNIST = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
SAMPLES = 64
LEVEL_FILES = ("model_int8_full.onnx", "calibration_full.json", "calibration_full.cache")

ARGS = None  # parsed command line: quantize, run, model


def tmp(name):
    return os.path.join(os.environ["TEST_TMPDIR"], name)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def digest(path):  # compared instead of the bytes: a failure prints two short lines
    return hashlib.sha256(read_bytes(path)).hexdigest()


class QuantizeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import numpy as np  # after `import qfuse`, so the init check below stays meaningful

        with gzip.open(FASHION_MNIST, "rb") as f:
            raw = f.read(16 + SAMPLES * 28 * 28)
        pixels = np.frombuffer(raw[16:], dtype=np.uint8).reshape(SAMPLES, 1, 28, 28)
        cls.images = pixels.astype(np.float32) / np.float32(255)  # as the IDX reader scales
        cls.npy = tmp("calib.npy")
        np.save(cls.npy, cls.images)
        cls.cli_dir = tmp("cli")
        subprocess.run(
            [ARGS.quantize, f"--model={ARGS.model}", f"--calib_data={cls.npy}", f"--calib_samples={SAMPLES}",
             "--fusion=full", "--analysis_samples=0", f"--output={cls.cli_dir}"],
            check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(cls.cli_dir, "report.json")) as f:
            cls.report = json.load(f)

        def samples():  # one dict per sample, without the batch dim
            for i in range(SAMPLES):
                yield {"input": cls.images[i]}

        cls.py_dir = tmp("python")
        cls.result = qfuse.quantize(ARGS.model, samples(), calib_samples=SAMPLES, fusion="full", output=cls.py_dir)

    def test_imports_the_built_module_without_numpy(self):
        self.assertEqual(os.path.realpath(os.path.dirname(qfuse.__file__)), os.path.realpath("python"))
        code = "import sys, qfuse; assert 'numpy' not in sys.modules, 'numpy imported'"
        subprocess.run([sys.executable, "-c", code], check=True)

    def test_generator_gives_the_cli_bytes(self):
        for name in LEVEL_FILES:
            with self.subTest(file=name):
                self.assertEqual(digest(os.path.join(self.py_dir, name)), digest(os.path.join(self.cli_dir, name)))

    def test_path_gives_the_cli_bytes(self):
        out = tmp("python_path")
        qfuse.quantize(ARGS.model, self.npy, calib_samples=SAMPLES, output=out)
        for name in LEVEL_FILES:
            self.assertEqual(digest(os.path.join(out, name)), digest(os.path.join(self.cli_dir, name)), name)

    def test_headroom_gives_the_cli_bytes(self):
        cli, py = tmp("cli_headroom"), tmp("python_headroom")
        subprocess.run(
            [ARGS.quantize, f"--model={ARGS.model}", f"--calib_data={self.npy}", f"--calib_samples={SAMPLES}",
             "--fusion=full", "--analysis_samples=0", "--activation_headroom=1.5", f"--output={cli}"],
            check=True, stdout=subprocess.DEVNULL)
        qfuse.quantize(ARGS.model, self.npy, calib_samples=SAMPLES, activation_headroom=1.5, output=py)
        for name in LEVEL_FILES:
            self.assertEqual(digest(os.path.join(py, name)), digest(os.path.join(cli, name)), name)
        # and not the default's
        self.assertNotEqual(digest(os.path.join(py, LEVEL_FILES[0])), digest(os.path.join(self.cli_dir, LEVEL_FILES[0])))

    def test_result_has_the_cli_numbers(self):
        r = self.result
        self.assertEqual(list(r["levels"]), ["full"])
        self.assertEqual(r["model"], os.path.join(self.py_dir, "model_int8_full.onnx"))
        self.assertEqual(r["calibration_table"], os.path.join(self.py_dir, "calibration_full.json"))
        self.assertEqual((r["calib_samples"], r["eval_samples"]), (48, 16))  # the last quarter held back
        cli = self.report["levels"][0]
        self.assertEqual(r["sqnr_db"], cli["metrics"]["sqnr_db"])
        self.assertEqual(r["cosine"], cli["metrics"]["cosine"])
        self.assertEqual(r["agreement"], cli["metrics"]["agreement"])
        self.assertEqual(r["nodes"], cli["float_nodes"])
        self.assertEqual(r["float_ops"], cli["conversion"]["float_ops"])
        self.assertIsNone(r["top1"])
        self.assertGreater(r["sqnr_db"], 20)

    def test_session_matches_tools_run(self):
        import numpy as np

        eight = tmp("eight.npy")
        np.save(eight, self.images[48:56])
        saved = tmp("eight.f32")
        subprocess.run([ARGS.run, f"--model={self.result['model']}", f"--data={eight}", f"--save_outputs={saved}"],
                       check=True, stdout=subprocess.DEVNULL)
        session = qfuse.Session(self.result["model"])
        self.assertEqual((session.input_names, session.output_names), (["input"], ["logits"]))
        logits = session.run({"input": self.images[48:56]})["logits"]
        self.assertEqual((logits.shape, logits.dtype), ((8, 10), np.float32))
        self.assertTrue(np.array_equal(logits, np.fromfile(saved, dtype="<f4").reshape(8, 10)))
        # Another dtype and layout (float64, Fortran order) converts to the same float32 input.
        again = session.run({"input": np.asfortranarray(self.images[48:56].astype(np.float64))})["logits"]
        self.assertTrue(np.array_equal(logits, again))

    def test_compare_reproduces_the_evaluation(self):
        import numpy as np

        held_back = tmp("held_back.npy")
        np.save(held_back, self.images[48:])
        report = qfuse.compare(ARGS.model, self.result["model"], held_back)
        self.assertEqual(report["samples"], 16)
        self.assertEqual(report["outputs"][0]["sqnr_db"], self.result["sqnr_db"])
        self.assertEqual(report["outputs"][0]["cosine"], self.result["cosine"])

    def test_errors_are_python_exceptions(self):
        missing = tmp("no_such_model.onnx")
        with self.assertRaisesRegex(FileNotFoundError, missing):
            qfuse.Session(missing)
        with self.assertRaisesRegex(FileNotFoundError, missing):
            qfuse.quantize(missing, self.npy, output=tmp("never"))
        with self.assertRaisesRegex(ValueError, "calibration sample 1, input 'input'.*got \\[28,28\\]"):
            qfuse.quantize(ARGS.model, [{"input": self.images[0]}, {"input": self.images[1, 0]}], output=tmp("bad"))
        with self.assertRaisesRegex(ValueError, "'x' is not an input of the model"):
            qfuse.Session(ARGS.model).run({"x": self.images[:1]})
        with self.assertRaisesRegex(ValueError, "activation_headroom must be a positive factor"):
            qfuse.quantize(ARGS.model, self.npy, activation_headroom=0.0)
        with self.assertRaisesRegex(ValueError, "activation_type: 'int4'"):
            qfuse.quantize(ARGS.model, self.npy, activation_type="int4")

    def test_never_overwrites_the_input_model(self):
        out = tmp("overwrite")
        os.makedirs(out, exist_ok=True)
        victim = os.path.join(out, "model_int8_full.onnx")
        with open(victim, "wb") as f:
            f.write(read_bytes(ARGS.model))
        before = read_bytes(victim)
        with self.assertRaisesRegex(ValueError, "output would overwrite an input"):
            qfuse.quantize(victim, self.npy, calib_samples=SAMPLES, output=out)
        self.assertEqual(read_bytes(victim), before)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quantize", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--model", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)
