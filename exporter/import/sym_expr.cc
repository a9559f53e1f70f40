#include "exporter/import/sym_expr.h"

#include <cctype>
#include <vector>

namespace ember {
namespace exporter {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

class Parser {
 public:
  Parser(const std::string& s, const std::map<std::string, int64_t>& syms) : s_(s), syms_(syms) {}

  absl::StatusOr<int64_t> parse() {
    auto v = expr();
    if (!v.ok()) return v;
    skip();
    if (pos_ != s_.size()) return error("unexpected '" + s_.substr(pos_) + "'");
    return v;
  }

 private:
  absl::Status error(const std::string& why) {
    return absl::InvalidArgumentError("cannot evaluate symbolic size '" + s_ + "': " + why);
  }
  void skip() { while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_; }
  bool eat(const char* tok) {
    skip();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(pos_, n, tok) == 0) { pos_ += n; return true; }
    return false;
  }

  absl::StatusOr<int64_t> expr() {  // sum
    auto lhs = term();
    if (!lhs.ok()) return lhs;
    int64_t v = *lhs;
    while (true) {
      if (eat("+")) { auto r = term(); if (!r.ok()) return r; v += *r; }
      else if (eat("-")) { auto r = term(); if (!r.ok()) return r; v -= *r; }
      else return v;
    }
  }
  absl::StatusOr<int64_t> term() {  // product
    auto lhs = unary();
    if (!lhs.ok()) return lhs;
    int64_t v = *lhs;
    while (true) {
      skip();
      if (s_.compare(pos_, 2, "**") == 0) return v;  // handled in power()
      if (eat("//")) { auto r = unary(); if (!r.ok()) return r; if (*r == 0) return error("division by zero"); v = floor_div(v, *r); }
      else if (eat("*")) { auto r = unary(); if (!r.ok()) return r; v *= *r; }
      else if (eat("/")) { auto r = unary(); if (!r.ok()) return r; if (*r == 0) return error("division by zero"); v = floor_div(v, *r); }
      else if (eat("%")) { auto r = unary(); if (!r.ok()) return r; if (*r == 0) return error("division by zero"); v = v - floor_div(v, *r) * *r; }
      else return v;
    }
  }
  absl::StatusOr<int64_t> unary() {
    if (eat("-")) { auto v = unary(); if (!v.ok()) return v; return -*v; }
    if (eat("+")) return unary();
    return power();
  }
  absl::StatusOr<int64_t> power() {
    auto base = atom();
    if (!base.ok()) return base;
    if (eat("**")) {
      auto e = unary();
      if (!e.ok()) return e;
      int64_t r = 1;
      for (int64_t i = 0; i < *e && i < 64; ++i) r *= *base;
      return r;
    }
    return base;
  }
  absl::StatusOr<std::vector<int64_t>> call_args() {
    std::vector<int64_t> args;
    if (eat(")")) return args;
    while (true) {
      auto v = expr();
      if (!v.ok()) return v.status();
      args.push_back(*v);
      if (eat(")")) return args;
      if (!eat(",")) return error("expected ',' or ')'");
    }
  }
  absl::StatusOr<int64_t> atom() {
    skip();
    if (pos_ >= s_.size()) return error("unexpected end");
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      auto v = expr();
      if (!v.ok()) return v;
      if (!eat(")")) return error("expected ')'");
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) v = v * 10 + (s_[pos_++] - '0');
      return v;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      std::string id = s_.substr(start, pos_ - start);
      if (id == "Symbol") {  // Symbol('s27', positive=True, integer=True)
        if (!eat("(")) return error("expected '(' after Symbol");
        skip();
        if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return error("expected a quoted symbol name");
        char q = s_[pos_++];
        size_t end = s_.find(q, pos_);
        if (end == std::string::npos) return error("unterminated symbol name");
        std::string name = s_.substr(pos_, end - pos_);
        size_t close = s_.find(')', end);
        if (close == std::string::npos) return error("unterminated Symbol(...)");
        pos_ = close + 1;
        return lookup(name);
      }
      if (eat("(")) {
        auto args = call_args();
        if (!args.ok()) return args.status();
        const std::vector<int64_t>& a = *args;
        if ((id == "Max" || id == "Min") && !a.empty()) {
          int64_t v = a[0];
          for (int64_t x : a) v = id == "Max" ? std::max(v, x) : std::min(v, x);
          return v;
        }
        if ((id == "FloorDiv" || id == "floor_div" || id == "IntTrueDiv") && a.size() == 2 && a[1] != 0) return floor_div(a[0], a[1]);
        if ((id == "CeilDiv" || id == "ceil_div") && a.size() == 2 && a[1] != 0) return -floor_div(-a[0], a[1]);
        if ((id == "Mod" || id == "PythonMod") && a.size() == 2 && a[1] != 0) return a[0] - floor_div(a[0], a[1]) * a[1];
        if ((id == "CeilToInt" || id == "FloorToInt" || id == "TruncToInt" || id == "Abs" || id == "ToFloat") && a.size() == 1) {
          return id == "Abs" ? (a[0] < 0 ? -a[0] : a[0]) : a[0];
        }
        return error("unsupported function " + id);
      }
      if (id == "True") return 1;
      if (id == "False") return 0;
      return lookup(id);
    }
    return error(std::string("unexpected character '") + c + "'");
  }
  absl::StatusOr<int64_t> lookup(const std::string& name) {
    auto it = syms_.find(name);
    if (it == syms_.end()) return error("unknown symbol " + name);
    return it->second;
  }

  const std::string& s_;
  const std::map<std::string, int64_t>& syms_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<int64_t> evaluate_sym_expr(const std::string& expr,
                                          const std::map<std::string, int64_t>& symbols) {
  return Parser(expr, symbols).parse();
}

}  // namespace exporter
}  // namespace ember
