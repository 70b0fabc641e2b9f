// Helpers shared by the fuzz targets: the input bytes as a file (qfuse's readers take
// paths), and invariant checks that stop the fuzzer with a message when they fail.
#ifndef QFUSE_TESTS_FUZZ_FUZZ_INPUT_H_
#define QFUSE_TESTS_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace qfuse::fuzz {

// Writes `data` to one file per process (under $TMPDIR or /tmp, named with `suffix`)
// and returns its path; the next call overwrites it.
std::string WriteInputFile(const uint8_t* data, size_t size, const std::string& suffix);

// Aborts with "fuzz invariant failed: <what>" unless `ok`: a finding, like a crash.
void Check(bool ok, const char* what);

// Lowers qfuse's tensor size cap for the rest of the process (mutated shapes must not
// exhaust the fuzzer's memory) and keeps OpenMP to one thread; call once per target.
void InitFuzzProcess();

}  // namespace qfuse::fuzz

// libFuzzer's entry point, defined by each target.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#endif  // QFUSE_TESTS_FUZZ_FUZZ_INPUT_H_
