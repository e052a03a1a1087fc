// One row of a result CSV as read back (read_csv): column name -> text.
#pragma once

#include <exception>
#include <map>
#include <string>

namespace harness::output {

using CsvRow = std::map<std::string, std::string>;

// The text of a column, "" when the row has none.
inline std::string text_of(const CsvRow& row, const std::string& column) {
    auto it = row.find(column);
    return it == row.end() ? "" : it->second;
}

// The number in a column, 0 when it is empty or not a number.
inline double number_of(const CsvRow& row, const std::string& column) {
    try {
        return std::stod(text_of(row, column));
    } catch (const std::exception&) {
        return 0;
    }
}

// output::row_name of a row read back (record.hpp).
std::string row_name(const std::string& backend, int ranks);
inline std::string row_name(const CsvRow& row) {
    return row_name(text_of(row, "backend"), static_cast<int>(number_of(row, "ranks")));
}

}  // namespace harness::output
