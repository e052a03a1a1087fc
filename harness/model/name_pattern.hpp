// A regular expression over layer-configuration names (`harness layers --filter`, `harness check
// --layers`): POSIX extended syntax, matched by the C library's automaton, so that matching takes
// time linear in the name whatever the expression (no backtracking: `(.*.*)*X$` is as quick as
// `conv`).
#pragma once

#include <regex.h>

#include <string>

namespace harness::model {

class NamePattern {
public:
    // Throws std::invalid_argument with the C library's reason when `expression` is not valid.
    explicit NamePattern(const std::string& expression);
    ~NamePattern();
    NamePattern(const NamePattern&) = delete;
    NamePattern& operator=(const NamePattern&) = delete;

    // True when the expression matches anywhere in `name`.
    bool found_in(const std::string& name) const;

private:
    regex_t compiled_{};
};

}  // namespace harness::model
