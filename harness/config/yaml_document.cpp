#include "config/yaml_document.hpp"

#include "config/config.hpp"
#include "config/yaml_fields.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

namespace harness::config {

std::string read_config_bytes(const std::string& path) {
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                               &std::fclose);
    if (!file) throw ConfigError(path + ": cannot read config: " + std::strerror(errno));
    std::string bytes;
    char buffer[1 << 16];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) bytes.append(buffer, n);
    if (std::ferror(file.get())) {
        throw ConfigError(path + ": cannot read config: " + std::strerror(errno));
    }
    return bytes;
}

namespace {

// Deeper than any config needs (the deepest key is backends[i].options.name): yaml-cpp gives up
// near 500 levels with "bad file" at the end of the line, and recurses that deep first.
constexpr int kMaxNesting = 64;

YAML::Mark mark_at(int line, int column) {
    YAML::Mark mark;
    mark.line = line;
    mark.column = column;
    return mark;
}

// Fails at the first place where the document nests more than kMaxNesting levels: flow
// collections ([ and { outside quotes and comments) inside block levels (each deeper
// indentation, each "- " of a list item).
void check_nesting(const std::string& path, const std::string& bytes) {
    std::vector<int> block;  // the indentation of each open block level
    int flow = 0;
    char quote = 0;
    int line = 0;
    for (size_t start = 0; start < bytes.size(); ++line) {
        size_t end = bytes.find('\n', start);
        if (end == std::string::npos) end = bytes.size();
        const std::string text = bytes.substr(start, end - start);
        start = end + 1;
        size_t i = 0;
        if (flow == 0 && quote == 0) {
            while (i < text.size() && text[i] == ' ') ++i;
            if (i == text.size() || text[i] == '#') continue;
            auto open_level = [&](int column) {
                while (!block.empty() && block.back() >= column) block.pop_back();
                block.push_back(column);
            };
            open_level(static_cast<int>(i));
            while (i + 1 < text.size() && text[i] == '-' && text[i + 1] == ' ') {
                i += 2;
                while (i < text.size() && text[i] == ' ') ++i;
                open_level(static_cast<int>(i));
            }
        }
        for (; i < text.size(); ++i) {
            const char c = text[i];
            if (quote != 0) {
                if (c == '\\' && quote == '"')
                    ++i;
                else if (c == quote)
                    quote = 0;
            } else if (c == '"' || c == '\'') {
                quote = c;
            } else if (c == '#' && (i == 0 || text[i - 1] == ' ')) {
                break;
            } else if (c == '[' || c == '{') {
                if (++flow + static_cast<int>(block.size()) > kMaxNesting)
                    fail_at(path, mark_at(line, static_cast<int>(i)), "",
                            "nested more than " + std::to_string(kMaxNesting) +
                                " levels deep; a config needs a few");
            } else if ((c == ']' || c == '}') && flow > 0) {
                --flow;
            }
        }
        if (static_cast<int>(block.size()) + flow > kMaxNesting)
            fail_at(path, mark_at(line, block.back()), "",
                    "nested more than " + std::to_string(kMaxNesting) +
                        " levels deep; a config needs a few");
    }
}

// The first tab in the indentation of lines 0 .. last_line, where YAML allows spaces only.
void check_indentation_tabs(const std::string& path, const std::string& bytes, int last_line) {
    int line = 0;
    for (size_t start = 0; start < bytes.size() && line <= last_line; ++line) {
        size_t end = bytes.find('\n', start);
        if (end == std::string::npos) end = bytes.size();
        for (size_t i = start; i < end && (bytes[i] == ' ' || bytes[i] == '\t'); ++i) {
            if (bytes[i] == '\t')
                fail_at(path, mark_at(line, static_cast<int>(i - start)), "",
                        "tab characters are not allowed for indentation (indent with spaces)");
        }
        start = end + 1;
    }
}

// Where the second document of a YAML stream starts, if there is one; builds nothing.
class SecondDocument : public YAML::EventHandler {
public:
    std::optional<YAML::Mark> start;

    void OnDocumentStart(const YAML::Mark& mark) override {
        if (documents_++ == 1) start = mark;
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                         YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                    YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}

private:
    int documents_ = 0;
};

}  // namespace

YAML::Node parse_document(const std::string& path, const std::string& bytes) {
    check_nesting(path, bytes);
    YAML::Node root;
    SecondDocument second;
    try {
        root = YAML::Load(bytes);
        // Two documents at most: yaml-cpp 0.7 reports documents forever after some malformed
        // input (a stray ','), so YAML::LoadAll would never return.
        std::istringstream stream(bytes);
        YAML::Parser parser(stream);
        if (parser.HandleNextDocument(second)) parser.HandleNextDocument(second);
    } catch (const YAML::Exception& e) {
        // yaml-cpp names a tab in the indentation "illegal map value", or worse.
        check_indentation_tabs(path, bytes, e.mark.is_null() ? INT32_MAX : e.mark.line);
        fail_at(path, e.mark, "", "syntax error: " + e.msg);
    }
    if (root.IsNull()) {
        throw ConfigError(path + ": the config is empty (it needs at least a 'backends' list)");
    }
    if (second.start) fail_at(path, *second.start, "", "expected one YAML document, found more");
    return root;
}

}  // namespace harness::config
