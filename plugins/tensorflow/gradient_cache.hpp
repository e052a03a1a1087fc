// The gradient part of a training step's graph, kept on disk from one worker to the next.
// TF_AddGradients asked layer by layer costs time quadratic in the graph's size (each call indexes
// every node's name: 42 s of a worker's 55 s set-up at hourglass8, docs/backends.md
// "tensorflow"). What it adds depends only on the forward graph, what is asked of it, TensorFlow
// and this plugin's code, so the first worker stores it under a key made of all four and every
// later one imports it: the same nodes, names and attributes, the same graph.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hb_tensorflow {

// Where a gradient is: an output of a node, by name.
struct NamedOutput {
    int tensor = -1;  // the IR tensor whose gradient it is; -1 for the input batch's
    std::string node;
    int index = 0;
};

// The nodes the gradients added to the graph (a serialised GraphDef of them alone) and which of
// their outputs are the gradients.
struct GradientSection {
    std::string graph_def;
    std::vector<NamedOutput> outputs;
};

// The cache's folder: HB_TENSORFLOW_CACHE where set ("off" or empty: no cache), else
// $XDG_CACHE_HOME/harness/tensorflow, else $HOME/.cache/harness/tensorflow, else none.
std::optional<std::filesystem::path> gradient_cache_folder();

// The key of a gradient section: SHA-256 over the file format, TensorFlow's version, this
// plugin's own file, the forward graph (every node canonical: wire::canonical_node) and the
// requests (which outputs are differentiated with respect to which inputs, in order).
std::string gradient_key(std::string_view forward_graph_def, std::string_view requests);

// One key's file in a folder.
class GradientCache {
public:
    GradientCache(std::filesystem::path folder, std::string key);
    const std::filesystem::path& file() const { return file_; }
    // The section stored under the key, or none: no file, or one this format did not write for
    // this key.
    std::optional<GradientSection> load() const;
    // Writes the section beside its file, then renames it into place, so that a worker reading
    // at the same time sees the whole file or none; throws hb::Error saying why it could not.
    // Files of the folder that no worker has loaded or stored for 14 days are removed.
    void store(const GradientSection& section) const;

private:
    std::filesystem::path folder_, file_;
    std::string key_;
};

}  // namespace hb_tensorflow
