#include "model/name_pattern.hpp"

#include <stdexcept>

namespace harness::model {

NamePattern::NamePattern(const std::string& expression) {
    const int error = regcomp(&compiled_, expression.c_str(), REG_EXTENDED | REG_NOSUB);
    if (error != 0) {
        char reason[256];
        regerror(error, &compiled_, reason, sizeof reason);
        throw std::invalid_argument(reason);
    }
}

NamePattern::~NamePattern() {
    regfree(&compiled_);
}

bool NamePattern::found_in(const std::string& name) const {
    return regexec(&compiled_, name.c_str(), 0, nullptr, 0) == 0;
}

}  // namespace harness::model
