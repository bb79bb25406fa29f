// SPDX-License-Identifier: MIT
// See control_request.hpp.
#include "tc/control_request.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace txpath::tc {

namespace {

using BoundJson = nlohmann::json;

// Counts depth and values as the SAX parser reports them, and stops it at the first bound.
class RequestBounds {
 public:
  std::string why;

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(BoundJson::number_integer_t) { return value(); }
  bool number_unsigned(BoundJson::number_unsigned_t) { return value(); }
  bool number_float(BoundJson::number_float_t, const std::string&) { return value(); }
  bool string(std::string&) { return value(); }
  bool binary(BoundJson::binary_t&) { return value(); }
  bool key(std::string&) { return true; }
  bool start_object(std::size_t) { return open(); }
  bool start_array(std::size_t) { return open(); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  bool value() {
    if (++values_ <= kMaxControlRequestValues) return true;
    why = "the request holds more than " + std::to_string(kMaxControlRequestValues) +
          " JSON values: it is not a txpath control request";
    return false;
  }
  bool open() {
    if (!value()) return false;
    if (++depth_ <= kMaxControlRequestDepth) return true;
    why = "the request nests JSON arrays and objects more than " + std::to_string(kMaxControlRequestDepth) +
          " deep: it is not a txpath control request";
    return false;
  }
  bool close() {
    --depth_;
    return true;
  }

  std::size_t depth_ = 0;
  std::size_t values_ = 0;
};

}  // namespace

std::string control_request_refusal(std::string_view request) {
  if (request.size() > kMaxControlRequestBytes)
    return "the request takes " + std::to_string(request.size()) + " bytes, more than the limit of " +
           std::to_string(kMaxControlRequestBytes);
  RequestBounds bounds;
  (void)BoundJson::sax_parse(request.begin(), request.end(), &bounds);
  return bounds.why;
}

}  // namespace txpath::tc
