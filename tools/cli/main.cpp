// `bertrt`: on-device BERT inference, pre-training and fine-tuning. One subcommand per file.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <csignal>

#include "backends/build_info.h"
#include "common.h"
#include "core/error.h"
#include "interrupt.h"

int main(int argc, char** argv) {
  // Past RLIMIT_FSIZE (ulimit -f) the kernel sends SIGXFSZ, whose default action kills the process
  // before AtomicFile can remove its temp file; ignored, write() fails with EFBIG and the error
  // path cleans up like any other write error.
  std::signal(SIGXFSZ, SIG_IGN);
  // Named "bertrt" whatever argv[0] is: the usage lines print it, not the build path.
  CLI::App app{
      "bertrt: BERT on small devices: inference, MLM+NSP pre-training and fine-tuning.\n"
      "Models are .brt files (see `bertrt init`, `bertrt info`).",
      "bertrt"};
  app.footer(
      "Exit status: 0 ok, 1 error, 2 usage error, 130/143 stopped by SIGINT/SIGTERM.\n"
      "Errors print one line: \"bertrt: error: ...\" naming the file, line, field or flag.");
  app.require_subcommand(1);
  app.set_version_flag(
      "--version",
      [] {
        std::string s = bertrt::version_text("bertrt");
        s.pop_back();  // CLI11 ends the line
        return s;
      },
      "print the version, the git commit, the backends built in and the CPU kernels this host "
      "runs, and exit");
  bertrt::cli::add_init(app);
  bertrt::cli::add_info(app);
  bertrt::cli::add_tokenize(app);
  bertrt::cli::add_forward(app);
  bertrt::cli::add_pretrain(app);
  bertrt::cli::add_finetune(app);
  bertrt::cli::add_eval(app);
  bertrt::cli::add_predict(app);
  bertrt::cli::add_fill_mask(app);
  bertrt::cli::add_embed(app);
  bertrt::cli::add_rerank(app);
  bertrt::cli::add_search(app);
  bertrt::cli::add_serve(app);
  bertrt::cli::add_plot(app);
  bertrt::cli::add_quantize(app);
  bertrt::cli::add_merge(app);
  bertrt::cli::add_bench(app);
  bertrt::cli::add_checksum_flag(app);
  // A word that is no subcommand: CLI11 would only say "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->check_name(argv[1]);
    if (!known) {
      const bool convert = std::string(argv[1]) == "convert";
      fmt::print(stderr, "bertrt: error: '{}' is not a subcommand (bertrt --help lists them){}\n",
                 argv[1],
                 convert ? "; checkpoints convert with the separate program bertrt-convert" : "");
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // Usage errors in the same form as the others ("bertrt: error: ..."); a value that does not
    // parse as its option's type ("--epochs 1.5") says what it is. Exit 2; runtime errors exit 1.
    const bool conversion = dynamic_cast<const CLI::ConversionError*>(&e) != nullptr;
    fmt::print(stderr, "bertrt: error: {}{}\nRun with --help for more information.\n", e.what(),
               conversion ? " (not a number of the option's type: see --help)" : "");
    return 2;
  } catch (const bertrt::cli::Interrupted& e) {
    fmt::print(stderr, "bertrt: interrupted: {}\n", e.what());
    return e.exit_code();  // 130 (SIGINT) / 143 (SIGTERM), as shells report a signal
  } catch (const bertrt::cli::UsageError& e) {
    fmt::print(stderr, "bertrt: error: {}\n", e.what());
    return 2;
  } catch (const bertrt::Error& e) {
    fmt::print(stderr, "bertrt: error: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "bertrt: error: out of memory (try a smaller --batch-size)\n");
    return 1;
  } catch (const std::exception& e) {
    // A library's own exception (std::filesystem, nlohmann::json) that no check turned into a
    // bertrt::Error first: an error, not an abort.
    fmt::print(stderr, "bertrt: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
