// `pooch plan`: offline what-if planning. Builds a Profile (from the zoo or a pooch-profile JSON
// file), makes a plan for a machine with one policy or all of them, and prints what the plan
// keeps, swaps and recomputes, the predicted iteration time and throughput, the peak memory, and
// the overhead against in-core with unbounded memory. Optionally writes the plan (--json), the
// simulated timeline (--trace) and its picture (--plot, core/plot/plot.h).
#include "core/plan/plan.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/flags.h"
#include "cli/plan/plan_trace.h"
#include "cli/subcommand.h"
#include "core/base/units.h"
#include "core/model/candidates.h"
#include "core/model/machines.h"
#include "core/model/model.h"
#include "core/model/model_json.h"
#include "core/plot/plot.h"
#include "core/sim/sim.h"
#include "core/zoo/zoo.h"

namespace pooch::cli {
namespace {

constexpr const char* kDefaultMachine = "v100-pcie3";
constexpr const char* kDefaultPolicy = "pooch";
// "Unbounded" device memory for the in-core baseline: large enough for any zoo network, small
// enough that the simulator's sums of sizes cannot overflow int64.
constexpr int64_t kUnboundedBytes = int64_t{1} << 60;
constexpr int64_t kMaxBatch = int64_t{1} << 20;
constexpr int64_t kMaxImage = int64_t{1} << 16;
constexpr int64_t kMaxRefine = int64_t{1} << 24;  // hours of planning; beyond it, a typo
// Profiles are text; anything larger than this is not one we wrote.
constexpr std::streamsize kMaxProfileBytes = std::streamsize{1} << 30;

void PrintHelp() {
  std::cout << "usage: pooch plan (--model NAME | --profile FILE) [flags]\n"
               "\n"
               "Plans keep / swap / recompute for every idle interval of every tensor of one\n"
               "training iteration and predicts its time and peak memory on a machine (PoocH,\n"
               "seeds/001 §4).\n"
               "\n"
               "input (exactly one):\n"
               "  --model NAME       a zoo network (below)\n"
               "  --profile FILE     a pooch-profile JSON file (POOCH_PROFILE_OUT writes one)\n"
               "  --batch N          mini-batch size; default: the model's (resnet50, alexnet,\n"
               "                     vgg16: 32; resnext101-3d: 1; tiny, chain8: 8). With\n"
               "                     --profile it only turns iterations/s into images/s\n"
               "  --image N          input side in pixels; default: the model's (224; 112 for\n"
               "                     resnext101-3d; 32 for tiny, chain8)\n"
               "  --frames N         input frames, resnext101-3d only; default 16\n"
               "machine:\n"
               "  --machine NAME     a preset (below); default "
            << kDefaultMachine
            << "\n"
               "  --memory SIZE      device memory the plan may use, e.g. 12GiB, 16000MB;\n"
               "                     default: the preset's\n"
               "  --link-gbps X      host link speed in GB/s, each direction (what-if, e.g. the\n"
               "                     12 a PCIe gen3 x16 link measures); default: the preset's\n"
               "plan:\n"
               "  --policy NAME      a policy (below) or 'all' for a table; default "
            << kDefaultPolicy
            << "\n"
               "  --refine N         pooch's refinement budget in simulations (0: the paper's\n"
               "                     method alone); default 2000, as pooch run plans\n"
               "  --json FILE        write the plan (pooch-plan JSON); one policy only\n"
               "  --write-profile FILE\n"
               "                     write the profile planned for (pooch-profile JSON): a\n"
               "                     zoo network to edit, or to feed back with --profile\n"
               "  --trace FILE       write the simulated timeline as a Chrome trace (Perfetto,\n"
               "                     chrome://tracing); one policy only\n"
               "  --plot FILE.png    draw device memory over one iteration (in-core, the plan,\n"
               "                     the capacity) and the compute, recompute, swap-out and\n"
               "                     swap-in activity beneath it; one policy only; needs\n"
               "                     gnuplot (Debian: gnuplot-nox), exit 2 without it\n"
               "  --help             this text\n"
               "\n"
               "exit codes: 0 a plan fits (with 'all': at least one); 1 no plan fits;\n"
               "            2 bad input (flags, values, profile file); 3 internal error\n"
               "\nmodels:\n";
  for (const std::string& name : ZooModelNames()) {
    std::cout << absl::StrFormat("  %-15s %s\n", name, ZooModelSummary(name));
  }
  std::cout << "machines:\n";
  for (const std::string& name : MachinePresetNames()) {
    std::cout << absl::StrFormat("  %-15s %s\n", name, MachinePresetSummary(name));
  }
  std::vector<std::string> policies;
  for (Policy p : AllPolicies()) policies.push_back(PolicyName(p));
  std::cout << "policies:\n  " << absl::StrJoin(policies, ", ") << "\n";
}

// Everything `pooch plan` was asked to do, validated.
struct Request {
  Profile profile;
  MachineModel machine;
  std::optional<int64_t> batch;  // for images/s
  bool all_policies = false;
  Policy policy = Policy::kPooch;
  PlanOptions options;
  std::optional<std::string> json_path;
  std::optional<std::string> trace_path;
  std::optional<std::string> plot_path;
  std::optional<std::string> profile_out_path;
};

absl::StatusOr<Profile> ReadProfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read profile '", path, "'"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad() || text.tellp() > kMaxProfileBytes) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read profile '", path, "'"));
  }
  absl::StatusOr<Profile> profile = ParseProfileJson(text.str());
  if (!profile.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", profile.status().message()));
  }
  return profile;
}

absl::StatusOr<Request> ParseRequest(const Flags& flags) {
  Request r;
  std::optional<std::string> model = flags.Get("model");
  std::optional<std::string> profile_path = flags.Get("profile");
  if (model.has_value() == profile_path.has_value()) {
    return absl::InvalidArgumentError("give exactly one of --model NAME or --profile FILE");
  }

  absl::StatusOr<std::optional<int64_t>> batch = flags.GetInt("batch", 1, kMaxBatch);
  if (!batch.ok()) return batch.status();
  absl::StatusOr<std::optional<int64_t>> image = flags.GetInt("image", 1, kMaxImage);
  if (!image.ok()) return image.status();
  absl::StatusOr<std::optional<int64_t>> frames = flags.GetInt("frames", 1, kMaxImage);
  if (!frames.ok()) return frames.status();
  absl::StatusOr<std::optional<int64_t>> memory = flags.GetBytes("memory", 1);
  if (!memory.ok()) return memory.status();

  absl::StatusOr<MachineModel> machine =
      MachinePreset(flags.Get("machine").value_or(kDefaultMachine));
  if (!machine.ok()) return machine.status();
  r.machine = *machine;
  if (*memory) r.machine.memory_bytes = **memory;
  if (std::optional<std::string> link = flags.Get("link-gbps")) {
    double gbps = 0;
    if (!absl::SimpleAtod(*link, &gbps) || !(gbps > 0) || gbps > 1e6) {
      return absl::InvalidArgumentError(
          absl::StrCat("--link-gbps '", *link, "': not a positive number of GB/s"));
    }
    r.machine.h2d_gbps = gbps;
    r.machine.d2h_gbps = gbps;
  }

  std::string policy = flags.Get("policy").value_or(kDefaultPolicy);
  if (policy == "all") {
    r.all_policies = true;
  } else {
    absl::StatusOr<Policy> p = ParsePolicy(policy);
    if (!p.ok()) return p.status();
    r.policy = *p;
  }
  absl::StatusOr<std::optional<int64_t>> refine = flags.GetInt("refine", 0, kMaxRefine);
  if (!refine.ok()) return refine.status();
  if (*refine) r.options.refine_simulations = static_cast<int>(**refine);
  r.json_path = flags.Get("json");
  r.trace_path = flags.Get("trace");
  r.plot_path = flags.Get("plot");
  r.profile_out_path = flags.Get("write-profile");
  if (r.all_policies && (r.json_path || r.trace_path || r.plot_path)) {
    return absl::InvalidArgumentError("--json, --trace and --plot need one --policy, not 'all'");
  }

  if (profile_path) {
    if (*image || *frames) {
      return absl::InvalidArgumentError("--image and --frames apply to --model, not --profile");
    }
    absl::StatusOr<Profile> p = ReadProfile(*profile_path);
    if (!p.ok()) return p.status();
    r.profile = *std::move(p);
    r.batch = *batch;
    // A measured profile holds only the allocations the runtime moves: plan all of them, as the
    // runtime does (a zoo network keeps kDefaultMinCandidateBytes).
    r.options.min_candidate_bytes = 0;
    return r;
  }
  ZooInput in;
  in.batch = static_cast<int>(batch->value_or(0));
  in.image = static_cast<int>(image->value_or(0));
  in.frames = static_cast<int>(frames->value_or(0));
  absl::StatusOr<ZooInput> resolved = ZooResolveInput(*model, in);
  if (!resolved.ok()) return resolved.status();
  absl::StatusOr<Profile> p = ZooProfile(*model, *resolved, r.machine);
  // FailedPrecondition here means the input is too small for the network: still bad input.
  if (!p.ok()) return absl::InvalidArgumentError(p.status().message());
  r.profile = *std::move(p);
  r.batch = resolved->batch;
  return r;
}

std::string Throughput(double iteration_us, const std::optional<int64_t>& batch) {
  if (iteration_us <= 0) return "-";
  double per_s = 1e6 / iteration_us;
  return batch ? absl::StrFormat("%.1f img/s", per_s * static_cast<double>(*batch))
               : absl::StrFormat("%.2f it/s", per_s);
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "'"));
  return absl::OkStatus();
}

int PlanOne(const Request& r, const SimResult& baseline) {
  absl::Time start = absl::Now();
  absl::StatusOr<PlanResult> result = MakePlan(r.profile, r.machine, r.policy, r.options);
  double planning_s = absl::ToDoubleSeconds(absl::Now() - start);
  if (!result.ok()) {
    ReportError(absl::StrCat("plan: no plan fits in ", FormatBytes(r.machine.memory_bytes), ": ",
                             result.status().message()));
    switch (result.status().code()) {
      case absl::StatusCode::kFailedPrecondition:
        return kExitNoPlan;
      case absl::StatusCode::kInvalidArgument:
        return kExitUsage;
      default:
        return kExitInternal;
    }
  }
  const SimResult& sim = result->sim;
  const DecisionCounts c = CountDecisions(result->plan, result->candidates);
  std::cout << absl::StrFormat("policy      %s (%d simulations, %.3f s)\n", PolicyName(r.policy),
                               result->simulations, planning_s);
  std::cout << absl::StrFormat("decisions   keep %d, swap %d, recompute %d\n", c.keep, c.swap,
                               c.recompute);
  std::cout << absl::StrFormat("iteration   %.1f ms (%s)\n", sim.iteration_us / 1e3,
                               Throughput(sim.iteration_us, r.batch));
  std::cout << absl::StrFormat("peak        %s of %s\n", FormatBytes(sim.peak_bytes),
                               FormatBytes(r.machine.memory_bytes));
  std::cout << absl::StrFormat(
      "traffic     %s swapped out, %s swapped in, %d recomputations "
      "(%.1f ms)\n",
      FormatBytes(sim.swapped_out_bytes), FormatBytes(sim.swapped_in_bytes), sim.recomputed_ops,
      sim.recompute_us / 1e3);
  if (baseline.feasible && baseline.iteration_us > 0) {
    std::cout << absl::StrFormat(
        "in-core     %.1f ms (%s) with unbounded memory, peak %s\n", baseline.iteration_us / 1e3,
        Throughput(baseline.iteration_us, r.batch), FormatBytes(baseline.peak_bytes));
    std::cout << absl::StrFormat("overhead    %+.1f %% time, %+.1f %% throughput vs in-core\n",
                                 100.0 * (sim.iteration_us / baseline.iteration_us - 1.0),
                                 100.0 * (baseline.iteration_us / sim.iteration_us - 1.0));
  } else {
    std::cout << "in-core     unknown (" << baseline.failure << ")\n";
  }

  if (r.json_path) {
    if (absl::Status s =
            WriteText(*r.json_path, PlanToJson(result->plan, r.profile, result->candidates));
        !s.ok()) {
      ReportError(absl::StrCat("plan: ", s.message()));
      return kExitUsage;
    }
  }
  if (r.trace_path) {
    std::string title = absl::StrCat("pooch plan: ", r.profile.name, ", ", PolicyName(r.policy),
                                     " on ", r.machine.name);
    if (absl::Status s = WritePlanTrace(*r.trace_path, title, r.profile, sim); !s.ok()) {
      ReportError(absl::StrCat("plan: ", s.message()));
      return kExitUsage;
    }
  }
  if (r.plot_path) {
    std::string title = absl::StrCat(r.profile.name, " on ", r.machine.name);
    if (absl::Status s =
            WritePlanPlot(*r.plot_path, title, r.profile, r.machine, result->plan, sim);
        !s.ok()) {
      ReportError(absl::StrCat("plan: --plot: ", s.message()));
      return kExitUsage;
    }
  }
  return kExitOk;
}

int PlanAll(const Request& r, const SimResult& baseline) {
  std::cout << absl::StrFormat("%-17s %5s %5s %6s %10s %13s %11s %10s %8s\n", "policy", "keep",
                               "swap", "recomp", "iter ms", "throughput", "peak", "vs in-core",
                               "plan s");
  int feasible = 0;
  for (Policy policy : AllPolicies()) {
    absl::Time start = absl::Now();
    absl::StatusOr<PlanResult> result = MakePlan(r.profile, r.machine, policy, r.options);
    double planning_s = absl::ToDoubleSeconds(absl::Now() - start);
    if (!result.ok()) {
      const char* what = result.status().code() == absl::StatusCode::kFailedPrecondition ? "no plan"
                         : result.status().code() == absl::StatusCode::kInvalidArgument  ? "skipped"
                                                                                         : "error";
      std::string reason(result.status().message());
      std::replace(reason.begin(), reason.end(), '\n', ' ');
      std::cout << absl::StrFormat("%-17s %s: %s\n", PolicyName(policy), what, reason);
      continue;
    }
    ++feasible;
    const SimResult& sim = result->sim;
    const DecisionCounts c = CountDecisions(result->plan, result->candidates);
    std::string vs =
        baseline.feasible && baseline.iteration_us > 0
            ? absl::StrFormat("%+.1f %%", 100.0 * (sim.iteration_us / baseline.iteration_us - 1.0))
            : "-";
    std::cout << absl::StrFormat("%-17s %5d %5d %6d %10.1f %13s %11s %10s %8.3f\n",
                                 PolicyName(policy), c.keep, c.swap, c.recompute,
                                 sim.iteration_us / 1e3, Throughput(sim.iteration_us, r.batch),
                                 FormatBytes(sim.peak_bytes), vs, planning_s);
  }
  if (feasible == 0) {
    ReportError(absl::StrCat("plan: no policy fits in ", FormatBytes(r.machine.memory_bytes)));
    return kExitNoPlan;
  }
  return kExitOk;
}

int PlanMain(int argc, char** argv) {
  FlagSpec spec;
  spec.values = {"model",     "profile", "batch",  "image", "frames", "machine",       "memory",
                 "link-gbps", "policy",  "refine", "json",  "trace",  "write-profile", "plot"};
  spec.switches = {"help"};
  absl::StatusOr<Flags> flags = ParseFlags(argc, argv, spec);
  if (!flags.ok()) {
    ReportError(absl::StrCat("plan: ", flags.status().message(), " (see pooch plan --help)"));
    return kExitUsage;
  }
  if (flags->Has("help")) {
    PrintHelp();
    return kExitOk;
  }
  absl::StatusOr<Request> request = ParseRequest(*flags);
  if (!request.ok()) {
    ReportError(absl::StrCat("plan: ", request.status().message()));
    return kExitUsage;
  }
  const Request& r = *request;
  // The intervals that matter on this machine (Note [Intervals that matter]), over how many
  // tensors and bytes.
  const std::vector<Candidate> candidates =
      FindCandidates(r.profile, &r.machine, r.options.min_candidate_bytes);
  std::vector<bool> counted(r.profile.tensors.size(), false);
  int tensors = 0;
  int64_t tensor_bytes = 0;
  for (const Candidate& c : candidates) {
    if (counted[c.tensor]) continue;
    counted[c.tensor] = true;
    ++tensors;
    tensor_bytes += r.profile.tensors[c.tensor].bytes;
  }

  if (r.profile_out_path) {
    if (absl::Status s = WriteText(*r.profile_out_path, ProfileToJson(r.profile)); !s.ok()) {
      ReportError(absl::StrCat("plan: ", s.message()));
      return kExitUsage;
    }
  }

  MachineModel unbounded = r.machine;
  unbounded.memory_bytes = kUnboundedBytes;
  SimOptions quick;
  quick.record = false;
  SimResult baseline = Simulate(r.profile, unbounded, KeepAllPlan(0), quick);

  // And the short ones that pooch and optimal may recompute (Candidate::recompute_only).
  const size_t short_recomputable =
      FindCandidates(r.profile, &r.machine, r.options.min_candidate_bytes, /*long_only=*/true,
                     /*short_recomputable=*/true)
          .size() -
      candidates.size();
  std::cout << absl::StrFormat(
      "profile     %s: %d ops, %d idle intervals that matter, of %d tensors (%s)%s\n",
      r.profile.name, r.profile.ops.size(), candidates.size(), tensors, FormatBytes(tensor_bytes),
      short_recomputable > 0
          ? absl::StrFormat(", and %d short ones to recompute", short_recomputable)
          : "");
  std::cout << absl::StrFormat(
      "machine     %s: %s device memory, %.0f GB/s to device, %.0f GB/s "
      "to host\n",
      r.machine.name, FormatBytes(r.machine.memory_bytes), r.machine.h2d_gbps, r.machine.d2h_gbps);
  return r.all_policies ? PlanAll(r, baseline) : PlanOne(r, baseline);
}

}  // namespace

POOCH_SUBCOMMAND(plan, "plan",
                 "plan keep/swap/recompute for a network on a machine and predict its time",
                 PlanMain);

}  // namespace pooch::cli
