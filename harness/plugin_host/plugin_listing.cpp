#include "plugin_host/plugin_listing.hpp"

#include "output/atomic_file.hpp"
#include "plugin_host/child_process.hpp"
#include "plugin_host/library_output.hpp"
#include "plugin_host/plugin_library.hpp"
#include "plugin_host/plugin_search.hpp"
#include "plugin_host/scratch_dir.hpp"

#include <fstream>

namespace harness::plugin_host {

namespace fs = std::filesystem;

namespace {

nlohmann::json capability_names(uint32_t caps) {
    nlohmann::json names = nlohmann::json::array();
    if (caps & HB_CAP_GRADIENTS) names.push_back("gradients");
    if (caps & HB_CAP_PHASE_TIMES) names.push_back("phase_times");
    if (caps & HB_CAP_PEAK_MEMORY) names.push_back("peak_memory");
    if (caps & HB_CAP_HOST_PLACEMENT) names.push_back("host_placement");
    if (caps & HB_CAP_PROFILE) names.push_back("profile");
    if (caps & HB_CAP_DATA_PARALLEL) names.push_back("data_parallel");
    if (caps & HB_CAP_INPUT_GRADIENT) names.push_back("input_gradient");
    return names;
}

const char* type_name(hb_option_type type) {
    switch (type) {
        case HB_OPTION_BOOL:
            return "bool";
        case HB_OPTION_INT:
            return "int";
        case HB_OPTION_CHOICE:
            return "choice";
    }
    return "unknown";
}

nlohmann::json options_json(const std::vector<hb::OptionSpec>& specs) {
    nlohmann::json options = nlohmann::json::array();
    for (const auto& s : specs) {
        nlohmann::json o = {
            {"key", s.key}, {"type", type_name(s.type)}, {"description", s.description}};
        if (s.type == HB_OPTION_INT) {
            o["min"] = s.min;
            o["max"] = s.max;
        }
        if (s.type == HB_OPTION_CHOICE) o["choices"] = s.choices;
        if (!s.default_value.empty()) o["default"] = s.default_value;
        o["effect"] = s.effect == HB_OPTION_CHANGES_TIMING ? "timing" : "step";
        if (!s.checked_on.empty()) o["checked_on"] = s.checked_on;
        options.push_back(o);
    }
    return options;
}

nlohmann::json load_failure(const fs::path& file, const std::string& error) {
    return {{"file", file.string()}, {"loaded", false}, {"error", error}};
}

}  // namespace

nlohmann::json describe_plugin_file(const fs::path& file) {
    try {
        const PluginLibrary library = PluginLibrary::load(file);
        const hb_plugin_info& info = library.info();
        nlohmann::json j = {
            {"file", file.string()},
            {"loaded", true},
            {"name", info.name},
            {"version", info.version},
            {"abi_version", std::to_string(HB_API_MAJOR(library.api().api_version)) + "." +
                                std::to_string(HB_API_MINOR(library.api().api_version))},
            {"description", info.description ? info.description : ""},
            {"capabilities", capability_names(info.capabilities)}};
        nlohmann::json libraries = nlohmann::json::object();
        for (int32_t i = 0; i < info.num_libraries; ++i)
            libraries[info.libraries[i].name] = info.libraries[i].version;
        j["libraries"] = libraries;
        nlohmann::json devices = nlohmann::json::array();
        for (int32_t i = 0; i < info.num_devices; ++i) {
            const hb_device_info& d = info.devices[i];
            devices.push_back({{"name", d.name},
                               {"description", d.description ? d.description : ""},
                               {"available", d.available != 0},
                               {"reason", d.unavailable_reason ? d.unavailable_reason : ""}});
        }
        j["devices"] = devices;
        if (const auto specs = library.declared_options()) j["options"] = options_json(*specs);
        return j;
    } catch (const std::exception& e) {
        return load_failure(file, e.what());
    }
}

nlohmann::json describe_in_child(const fs::path& file, double timeout_s) {
    const ScratchDir scratch_dir("harness-describe");
    const fs::path out = scratch_dir.path() / (file.filename().string() + ".json");
    ChildProcess child({own_executable(), "__describe", file.string(), out.string()});
    ExitInfo exit = child.wait(timeout_s);
    nlohmann::json description;
    if (exit.exit_code == 0 && !exit.signaled && !exit.timed_out && fs::exists(out)) {
        std::ifstream in(out);
        description = nlohmann::json::parse(in);
    } else if (exit.signaled) {
        description = load_failure(file, "crashed while loading: " + describe_signal(exit.signal));
    } else if (exit.timed_out) {
        description = load_failure(file, "hung while loading");
    } else {
        description =
            load_failure(file, "describe exited with code " + std::to_string(exit.exit_code));
    }
    const std::string log = read_log(log_path_of(out.string()));
    if (!log.empty()) description["log"] = log;
    return description;
}

nlohmann::json list_plugins(double timeout_s) {
    nlohmann::json plugins = nlohmann::json::array();
    for (const auto& file : list_plugin_files())
        plugins.push_back(describe_in_child(file, timeout_s));
    return plugins;
}

bool announces(const nlohmann::json& description, const std::string& capability) {
    const auto caps = description.find("capabilities");
    if (caps == description.end() || !caps->is_array()) return false;
    for (const auto& c : *caps)
        if (c.is_string() && c.get<std::string>() == capability) return true;
    return false;
}

std::optional<std::vector<hb::OptionSpec>> declared_options(const nlohmann::json& description) {
    if (!description.value("loaded", false) || !description.contains("options"))
        return std::nullopt;
    std::vector<hb::OptionSpec> specs;
    for (const auto& o : description["options"]) {
        hb::OptionSpec s;
        s.key = o.value("key", "");
        const std::string type = o.value("type", "");
        // A type this harness does not know: the plugin alone can check its options.
        if (type != "bool" && type != "int" && type != "choice") return std::nullopt;
        s.type = type == "int"      ? HB_OPTION_INT
                 : type == "choice" ? HB_OPTION_CHOICE
                                    : HB_OPTION_BOOL;
        s.min = o.value("min", int64_t{0});
        s.max = o.value("max", int64_t{0});
        if (o.contains("choices")) s.choices = o["choices"].get<std::vector<std::string>>();
        s.description = o.value("description", "");
        s.default_value = o.value("default", "");
        s.effect = o.value("effect", "step") == "timing" ? HB_OPTION_CHANGES_TIMING
                                                         : HB_OPTION_CHANGES_STEP;
        s.checked_on = o.value("checked_on", "");
        specs.push_back(std::move(s));
    }
    return specs;
}

}  // namespace harness::plugin_host
