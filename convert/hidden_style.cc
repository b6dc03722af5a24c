#include "convert/hidden_style.h"

#include <cctype>
#include <cstdlib>
#include <string>

namespace cops {
namespace {

struct Length {
  double number = 0;
  std::string_view unit;  // what follows the number, up to a '!'
};

std::optional<Length> ParseLength(std::string_view value) {
  size_t i = 0;
  while (i < value.size() &&
         (std::isdigit(static_cast<unsigned char>(value[i])) || value[i] == '.')) {
    ++i;
  }
  if (i == 0) return std::nullopt;
  Length out;
  out.number = std::atof(std::string(value.substr(0, i)).c_str());
  out.unit = value.substr(i, value.find('!', i) == std::string_view::npos ? std::string_view::npos
                                                                          : value.find('!', i) - i);
  return out;
}

}  // namespace

std::optional<double> LengthInPoints(std::string_view value) {
  const std::optional<Length> length = ParseLength(value);
  if (!length) return std::nullopt;
  const std::string_view unit = length->unit;
  double points_per_unit;
  if (unit == "pt") {
    points_per_unit = 1;
  } else if (unit.empty() || unit == "px") {
    points_per_unit = 0.75;
  } else if (unit == "in") {
    points_per_unit = 72;
  } else if (unit == "cm") {
    points_per_unit = 72 / 2.54;
  } else if (unit == "mm") {
    points_per_unit = 72 / 25.4;
  } else if (unit == "pc") {
    points_per_unit = 12;
  } else {
    return std::nullopt;
  }
  return length->number * points_per_unit;
}

bool IsTinyFontSize(std::string_view value) {
  const std::optional<Length> length = ParseLength(value);
  if (!length) return false;
  if (length->number == 0) return true;
  const std::optional<double> points = LengthInPoints(value);
  return points && *points <= kTinyFontPt;
}

bool IsWhiteColor(std::string_view value) {
  value = value.substr(0, value.find('!'));
  return value == "#fff" || value == "#ffffff" || value == "white" ||
         value.starts_with("rgb(255,255,255");
}

}  // namespace cops
