// Writes the reports of the hand-built result of report_fixture.h into a folder, to look
// at the page in a browser (tools/check_report_in_chromium.sh):
//   bazel run //tests/tools/quantize:report_sample -- /tmp/report-sample
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/tools/quantize/report_fixture.h"
#include "tools/quantize/report.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: report_sample OUTPUT_FOLDER\n");
    return 1;
  }
  const std::string dir = argv[1];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const auto result = qfuse::testing::SampleResult(true);
  const auto config = qfuse::testing::SampleConfig();
  const absl::Status status = qfuse::tools::WriteReports(result, config, dir + "/report.json", dir + "/report.html");
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  std::printf("%s", qfuse::tools::SummaryTable(result, config).c_str());
  std::printf("wrote %s/report.json and %s/report.html\n", dir.c_str(), dir.c_str());
  return 0;
}
