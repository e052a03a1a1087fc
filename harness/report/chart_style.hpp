// What every chart of `harness report --charts` shares: its gnuplot header, quoting, file names
// and the colour of each operation kind.
#pragma once

#include <string>

namespace harness::report {

// A gnuplot string in double quotes: backslashes and quotes escaped.
std::string quoted(const std::string& s);

// A file name from a config name: letters, digits, '-', '_' and '.' kept, the rest '_'.
std::string file_stem(const std::string& config);

// The first lines of <name>.gp: an SVG of `width` x `height` written to <name>.svg, its title.
std::string chart_header(const std::string& name, const std::string& title, int width, int height);

// One colour ("#rrggbb") per operation kind (output::kOperationKinds) and for "unaccounted", the
// same in every chart and no two alike; black for any other.
const char* kind_colour(const std::string& kind);

}  // namespace harness::report
