#include "report/chart_style.hpp"

#include <fmt/format.h>

#include <cctype>
#include <map>

namespace harness::report {

std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (c != '\n') out += c;
    }
    return out + "\"";
}

std::string file_stem(const std::string& config) {
    std::string s = config.empty() ? "results" : config;
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
            c = '_';
    return s;
}

const char* kind_colour(const std::string& kind) {
    static const std::map<std::string, const char*> colours = {
        {"convolution forward", "#1f77b4"},
        {"convolution backward-data", "#9ecae1"},
        {"convolution backward-weights", "#17becf"},
        {"convolution backward (data and weights)", "#393b79"},
        {"batch norm", "#ff7f0e"},
        {"ReLU", "#2ca02c"},
        {"pooling", "#98df8a"},
        {"upsampling", "#bcbd22"},
        {"sums", "#9467bd"},
        {"loss", "#e377c2"},
        {"optimizer", "#d62728"},
        {"reorders and copies", "#8c564b"},
        {"transfers", "#f0e442"},
        {"other", "#7f7f7f"},
        {"unaccounted", "#d9d9d9"},
    };
    const auto it = colours.find(kind);
    return it == colours.end() ? "#000000" : it->second;
}

std::string chart_header(const std::string& name, const std::string& title, int width, int height) {
    return fmt::format(
        "# Drawn by `harness report --charts`; redraw with: gnuplot {0}.gp\n"
        "set terminal svg size {1},{2} dynamic noenhanced font \"sans,12\" background "
        "rgb \"white\"\n"
        "set output \"{0}.svg\"\n"
        "set title {3}\n"
        "set grid\n",
        name, width, height, quoted(title));
}

}  // namespace harness::report
