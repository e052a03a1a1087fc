// Text from outside (a config's bytes, a command-line word) made safe to print on one line.
#pragma once

#include <string>

namespace harness {

// `text` with every byte that a terminal would not show as itself escaped: control characters
// (a newline as \n, a tab as \t, others as \xNN) and bytes that are not valid UTF-8 (\xNN).
// Printable ASCII and valid UTF-8 characters are kept.
std::string printable(const std::string& text);

}  // namespace harness
