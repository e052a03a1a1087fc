#include "commands.hpp"

#include "backend_selection.hpp"
#include "destinations.hpp"
#include "output/csv_reader.hpp"
#include "output/sidecar_path.hpp"
#include "publish/publish.hpp"
#include "publish/results_transaction.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>

namespace harness {

namespace {

namespace fs = std::filesystem;

std::optional<std::string> read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The folder --to names, without a trailing separator: a folder of a results/ folder (whose
// README.md is the index), named without `..`.
fs::path results_folder(const std::string& to) {
    for (const auto& part : fs::path(to))
        if (part == "..")
            throw UsageError("--to: '" + to +
                             "' climbs with '..': give the folder to publish in as results/NAME");
    fs::path folder = fs::path(to).lexically_normal();
    if (folder.filename().empty()) folder = folder.parent_path();
    const std::string name = folder.filename().string();
    if (name.empty() || name == ".")
        throw UsageError("--to: '" + to +
                         "' names no folder of its own: give the results folder to publish in, "
                         "such as results/NAME");
    if (folder.parent_path().filename() != "results")
        throw UsageError("--to: '" + to +
                         "' is not a folder of a results/ folder: publish in results/NAME, whose "
                         "README.md is the index of the published runs");
    return folder;
}

// Publish replaces results/ by a changed copy of itself, made beside it: its parent must take
// new files (probed there, never in results/, which a probe would change); neither results/ nor
// the folder may be a symlink, through which the copy would write elsewhere, nor a file.
void check_destination(const fs::path& folder) {
    std::error_code ec;
    const fs::path root = folder.parent_path();
    for (const fs::path& path : {root, folder}) {
        if (fs::is_symlink(path, ec)) {
            const fs::path target = fs::read_symlink(path, ec);
            throw UsageError("--to: " + path.string() + " is a symlink to " + target.string() +
                             (fs::exists(path, ec) ? "" : ", which does not exist") +
                             ": publish writes in a results/ folder itself");
        }
        if (fs::exists(path, ec) && !fs::is_directory(path, ec))
            throw UsageError("--to: " + path.string() + " is a file, not a folder");
    }
    if (fs::is_directory(root / "README.md", ec))
        throw UsageError("--to: the index " + (root / "README.md").string() + " is a folder");
    const fs::path parent = root.parent_path();
    check_dir("--to", parent.empty() ? "." : parent.string());
}

// A file that publish copies into the folder: new there, or the same bytes already.
void check_copy(const std::string& text, const fs::path& target) {
    std::error_code ec;
    if (!fs::exists(target, ec)) return;
    if (read_file(target) != text)
        throw UsageError(target.string() +
                         " exists and differs: publish does not replace a published file; give "
                         "the run another name, or remove the old one first");
}

// The run CSVs the folder's summary shows: those there, and the one published (under its name).
// The runs the folder's summary shows: `run`, and the folder's other runs, by file name.
std::vector<output::RunResults> summary_inputs(const fs::path& folder,
                                               const output::RunResults& run) {
    std::vector<output::RunResults> inputs{run};
    std::error_code ec;
    const fs::path name = fs::path(run.csv_path).filename();
    if (fs::is_directory(folder, ec))
        for (const auto& entry : fs::directory_iterator(folder)) {
            const fs::path path = entry.path();
            if (path.extension() == ".csv" && path.filename() != name &&
                output::is_run_csv(path.string()))
                inputs.push_back(output::read_run_results(path.string()));
        }
    std::sort(inputs.begin(), inputs.end(), [](const auto& a, const auto& b) {
        return fs::path(a.csv_path).filename() < fs::path(b.csv_path).filename();
    });
    return inputs;
}

}  // namespace

int publish_command(const PublishArgs& args) {
    output::RunResults run;
    try {
        run = output::read_run_results(args.csv);
    } catch (const std::exception& e) {
        std::fprintf(stderr,
                     "harness publish: %s\nharness publish: %s was not published; nothing "
                     "was written\n",
                     e.what(), args.csv.c_str());
        return kExitUsage;
    }
    bool unchecked = false;
    bool refused = false;
    for (const auto& problem : publish::validate_run(run)) {
        if (problem.unchecked && args.allow_unchecked) {
            unchecked = true;
            continue;
        }
        std::fprintf(stderr, "harness publish: %s\n", problem.message.c_str());
        refused = true;
    }
    if (refused) {
        std::fprintf(stderr, "harness publish: %s was not published; nothing was written\n",
                     args.csv.c_str());
        return kExitUsage;
    }

    const fs::path csv = args.csv;
    const fs::path sidecar = output::sidecar_path(args.csv);
    fs::path folder, root, index;
    std::string csv_text, sidecar_text, summary, index_text;
    try {
        folder = results_folder(args.to);
        root = folder.parent_path();
        index = root / "README.md";
        check_destination(folder);
        csv_text = publish::canonical_csv(run.table);
        if (csv_text != run.csv_text)
            std::fprintf(stderr,
                         "harness publish: %s differs from what harness run writes in form only "
                         "(CR LF line ends, or quotes); it is published as harness run writes "
                         "it, with LF line ends\n",
                         csv.c_str());
        sidecar_text = *run.sidecar_text;
        check_copy(csv_text, folder / csv.filename());
        check_copy(sidecar_text, folder / sidecar.filename());
        if (const auto others =
                publish::published_elsewhere(run.table, root, folder / csv.filename());
            !others.empty())
            throw UsageError(others.front() +
                             " holds a row of this run, every cell the same: a run is published "
                             "once, under one name, and a row once");
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness publish: %s; nothing was written\n", e.what());
        return kExitUsage;
    }

    // Everything at once: the folder's files, its summary and the index, or none of them. The
    // summary and the index are made from results/ as it is while the transaction holds it.
    std::unique_ptr<publish::ResultsTransaction> transaction;
    try {
        fs::create_directories(fs::absolute(root).parent_path());
        transaction = std::make_unique<publish::ResultsTransaction>(root);
        const fs::path summary_path = folder / "summary.md";
        const std::optional<std::string> old_summary = read_file(summary_path);
        if (old_summary && old_summary->rfind(publish::kSummaryMark, 0) != 0)
            throw UsageError(summary_path.string() +
                             " was not written by harness publish, which would replace it: "
                             "publish this run in a folder of its own");
        summary =
            publish::summary_markdown(folder.filename().string(), summary_inputs(folder, run));
        const auto entry = publish::index_entry(folder.filename().string(), csv.filename().string(),
                                                run.table.rows, args.what, unchecked);
        try {
            index_text = publish::update_index(read_file(index).value_or(""), entry);
        } catch (const std::runtime_error& e) {
            throw UsageError("the index " + index.string() + " cannot take the run: " + e.what() +
                             "; is --to one folder too high?");
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness publish: %s; nothing was written\n", e.what());
        return kExitUsage;
    }
    try {
        transaction->write(folder / csv.filename(), csv_text);
        transaction->write(folder / sidecar.filename(), sidecar_text);
        transaction->write(folder / "summary.md", summary);
        transaction->write(index, index_text);
        transaction->commit();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "harness publish: %s; %s is as it was\n", e.what(), root.c_str());
        return kExitOutputFailed;
    }
    std::printf("published %s in %s (summary: %s, index: %s)%s\n", csv.filename().c_str(),
                folder.c_str(), (folder / "summary.md").c_str(), index.c_str(),
                unchecked ? "; unchecked rows are marked so in the index" : "");
    return kExitOk;
}

}  // namespace harness
