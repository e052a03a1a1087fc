#include "gradient_cache.hpp"

#include "hb/error.hpp"
#include "hb/sha256.hpp"
#include "wire.hpp"

#include <tensorflow/c/c_api.h>

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

namespace hb_tensorflow {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "hb-tensorflow-gradients 1";
// A file no worker has read or written for this long goes when the next is stored.
constexpr auto kUnusedFor = std::chrono::hours(24 * 14);

std::string file_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
}

// This plugin's own file: a rebuilt plugin may build other gradients.
std::string own_file_sha256() {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&own_file_sha256), &info) || !info.dli_fname)
        throw hb::Error("dladdr found no file for this plugin");
    const std::optional<std::string> digest = hb::file_sha256_hex(info.dli_fname);
    if (!digest) throw hb::Error(std::string("cannot read this plugin's file ") + info.dli_fname);
    return *digest;
}

}  // namespace

std::optional<fs::path> gradient_cache_folder() {
    if (const char* set = std::getenv("HB_TENSORFLOW_CACHE")) {
        const std::string folder = set;
        if (folder.empty() || folder == "off") return std::nullopt;
        return fs::path(folder);
    }
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
        return fs::path(xdg) / "harness" / "tensorflow";
    if (const char* home = std::getenv("HOME"); home && *home)
        return fs::path(home) / ".cache" / "harness" / "tensorflow";
    return std::nullopt;
}

std::string gradient_key(std::string_view forward_graph_def, std::string_view requests) {
    std::string material = std::string(kFormat) + "\n" + TF_Version() + "\n" + own_file_sha256() +
                           "\n" + std::string(requests) + "\n";
    for (const wire::GraphNode& node : wire::graph_nodes(forward_graph_def))
        material += wire::canonical_node(node.bytes);
    return hb::sha256_hex(material);
}

GradientCache::GradientCache(fs::path folder, std::string key)
    : folder_(std::move(folder)), file_(folder_ / (key + ".gradients")), key_(std::move(key)) {}

std::optional<GradientSection> GradientCache::load() const {
    const std::string bytes = file_bytes(file_);
    std::istringstream in(bytes);
    std::string line;
    if (!std::getline(in, line) || line != kFormat) return std::nullopt;
    if (!std::getline(in, line) || line != "key " + key_) return std::nullopt;
    GradientSection section;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string word;
        fields >> word;
        if (word == "output") {
            NamedOutput o;
            if (!(fields >> o.tensor >> o.node >> o.index)) return std::nullopt;
            section.outputs.push_back(o);
        } else if (word == "graph_def") {
            size_t size = 0;
            if (!(fields >> size)) return std::nullopt;
            const auto at = static_cast<size_t>(in.tellg());
            if (at > bytes.size() || bytes.size() - at != size) return std::nullopt;
            section.graph_def = bytes.substr(at);
            std::error_code error;  // a file in use is kept (store)
            fs::last_write_time(file_, fs::file_time_type::clock::now(), error);
            return section;
        } else {
            return std::nullopt;
        }
    }
    return std::nullopt;
}

void GradientCache::store(const GradientSection& section) const {
    std::error_code error;
    fs::create_directories(folder_, error);
    if (error) throw hb::Error("cannot create " + folder_.string() + ": " + error.message());
    const fs::path aside = file_.string() + "." + std::to_string(getpid()) + ".part";
    {
        std::ofstream out(aside, std::ios::binary | std::ios::trunc);
        out << kFormat << "\nkey " << key_ << "\n";
        for (const NamedOutput& o : section.outputs)
            out << "output " << o.tensor << " " << o.node << " " << o.index << "\n";
        out << "graph_def " << section.graph_def.size() << "\n" << section.graph_def;
        out.close();
        if (!out) {
            fs::remove(aside, error);
            throw hb::Error("cannot write " + aside.string());
        }
    }
    fs::rename(aside, file_, error);
    if (error) {
        const std::string why = error.message();
        fs::remove(aside, error);
        throw hb::Error("cannot rename " + aside.string() + " to " + file_.string() + ": " + why);
    }
    // Files unused for long go; one that cannot be read or removed stays, without an error.
    const auto now = fs::file_time_type::clock::now();
    for (fs::directory_iterator e(folder_, error), end; !error && e != end; e.increment(error)) {
        std::error_code ignored;
        const auto used = e->last_write_time(ignored);
        if (!ignored && now - used > kUnusedFor) fs::remove(e->path(), ignored);
    }
}

}  // namespace hb_tensorflow
