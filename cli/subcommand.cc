#include "cli/subcommand.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>

namespace pooch::cli {
namespace {

// Function-local, so that registrars in other files may run first (static init order).
std::vector<Subcommand>& Registry() {
  static std::vector<Subcommand>* registry = new std::vector<Subcommand>();
  return *registry;
}

}  // namespace

SubcommandRegistrar::SubcommandRegistrar(const Subcommand& subcommand) {
  Registry().push_back(subcommand);
}

std::vector<Subcommand> Subcommands() {
  std::vector<Subcommand> sorted = Registry();
  std::sort(sorted.begin(), sorted.end(), [](const Subcommand& a, const Subcommand& b) {
    return std::strcmp(a.name, b.name) < 0;
  });
  return sorted;
}

void ReportError(absl::string_view message) {
  std::string line(message);
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::cerr << "pooch: " << line << std::endl;
}

void ReportError(const absl::Status& status) { ReportError(status.message()); }

}  // namespace pooch::cli
