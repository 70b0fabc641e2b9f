#include "tests/fuzz/fuzz_input.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "base/checked_math.h"

namespace qfuse::fuzz {

std::string WriteInputFile(const uint8_t* data, size_t size, const std::string& suffix) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/qfuse-fuzz-" +
                           std::to_string(::getpid()) + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  Check(f != nullptr, "cannot create the input file");
  Check(size == 0 || std::fwrite(data, 1, size, f) == size, "cannot write the input file");
  std::fclose(f);
  return path;
}

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz invariant failed: %s\n", what);
  std::abort();
}

void InitFuzzProcess() {
  base::SetMaxTensorBytes(int64_t{16} << 20);
  ::setenv("OMP_NUM_THREADS", "1", /*overwrite=*/0);
}

}  // namespace qfuse::fuzz
