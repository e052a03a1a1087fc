#include "output/csv_reader.hpp"

#include "output/csv_reporter.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace harness::output {

namespace {

using Row = std::vector<std::string>;

struct ParsedCsv {
    std::vector<Row> rows;
    std::vector<size_t> lines;  // the line each row starts on
};

[[noreturn]] void malformed(const std::string& path, const std::string& where,
                            const std::string& what) {
    throw std::runtime_error("malformed CSV " + path + " (" + where + "): " + what);
}

std::string at_line(size_t line) {
    return "line " + std::to_string(line);
}

// RFC 4180: fields separated by commas, rows by LF or CRLF; a quoted field may hold commas,
// line breaks and doubled quotes.
ParsedCsv parse_csv(const std::string& text, const std::string& path) {
    ParsedCsv parsed;
    Row row;
    std::string field;
    bool in_quotes = false, after_quote = false;
    size_t line = 1, row_line = 1;
    const auto end_field = [&] {
        row.push_back(std::move(field));
        field.clear();
        after_quote = false;
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const char next = i + 1 < text.size() ? text[i + 1] : '\0';
        if (c == '\n') ++line;
        if (in_quotes) {
            if (c != '"') {
                field += c;
            } else if (next == '"') {
                field += '"';
                ++i;
            } else {
                in_quotes = false;
                after_quote = true;
            }
        } else if (c == ',') {
            end_field();
        } else if (c == '\n' || (c == '\r' && next == '\n')) {
            if (c == '\r') {
                ++i;
                ++line;
            }
            end_field();
            parsed.rows.push_back(std::move(row));
            parsed.lines.push_back(row_line);
            row.clear();
            row_line = line;
        } else if (after_quote) {
            malformed(path, at_line(line), "text after a closing quote");
        } else if (c == '"') {
            if (!field.empty()) malformed(path, at_line(line), "quote inside an unquoted field");
            in_quotes = true;
        } else if (c == '\r') {
            malformed(path, at_line(line), "carriage return outside quotes");
        } else {
            field += c;
        }
    }
    if (in_quotes) malformed(path, at_line(line), "unterminated quoted field");
    if (!row.empty() || !field.empty() || after_quote) {
        end_field();
        parsed.rows.push_back(std::move(row));
        parsed.lines.push_back(row_line);
    }
    return parsed;
}

}  // namespace

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

CsvTable read_csv_table(const std::string& path) {
    return csv_table_of(read_text(path), path);
}

CsvTable csv_table_of(const std::string& text, const std::string& path) {
    const ParsedCsv parsed = parse_csv(text, path);
    const std::vector<Row>& rows = parsed.rows;
    if (rows.empty()) malformed(path, "header", "empty file");
    CsvTable table;
    table.header = rows.front();
    for (size_t r = 1; r < rows.size(); ++r) {
        if (rows[r].size() != table.header.size()) {
            malformed(path, at_line(parsed.lines[r]),
                      fmt::format("row {} has {} fields, header has {}{}", r, rows[r].size(),
                                  table.header.size(),
                                  r + 1 == rows.size() && rows[r].size() < table.header.size()
                                      ? " (the file's end is cut short)"
                                      : ""));
        }
        CsvRow& m = table.rows.emplace_back();
        for (size_t c = 0; c < table.header.size(); ++c) m[table.header[c]] = rows[r][c];
        table.lines.push_back(parsed.lines[r]);
    }
    return table;
}

std::vector<CsvRow> read_csv(const std::string& path) {
    return read_csv_table(path).rows;
}

bool is_run_csv(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string line;
    if (!std::getline(in, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    try {
        const ParsedCsv header = parse_csv(line + "\n", path);
        return !header.rows.empty() && run_header_problem(header.rows.front()).empty();
    } catch (const std::exception&) {
        return false;
    }
}

}  // namespace harness::output
