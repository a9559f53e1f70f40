#include "tools/devtools/trace_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

namespace ember {
namespace tools {
namespace {

const char* kind_name(TraceEventKind kind) {
  switch (kind) {
    case TraceEventKind::MethodInit: return "method_init";
    case TraceEventKind::DelegateInit: return "delegate_init";
    case TraceEventKind::Execute: return "execute";
    case TraceEventKind::Instruction: return "instruction";
    case TraceEventKind::DelegateOp: return "delegate_op";
    case TraceEventKind::ProgramLoad: return "program_load";
  }
  return "unknown";
}

bool is_execute_part(const OwnedEvent& e) {
  return e.kind == TraceEventKind::Instruction || e.kind == TraceEventKind::DelegateOp;
}

std::string escape_xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// 'File "/long/path/modeling_bert.py", line 192, in forward: code' -> "modeling_bert.py:192".
std::string short_source(const std::string& source) {
  const size_t file = source.find("File \"");
  const size_t line = source.find("\", line ");
  if (file == std::string::npos || line == std::string::npos || line < file) return source;
  std::string path = source.substr(file + 6, line - file - 6);
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos) path = path.substr(slash + 1);
  size_t end = line + 8;
  while (end < source.size() && source[end] >= '0' && source[end] <= '9') ++end;
  return path + ":" + source.substr(line + 8, end - line - 8);
}

}  // namespace

std::vector<OwnedEvent> copy_events(const TraceEvent* events, size_t count) {
  std::vector<OwnedEvent> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const TraceEvent& e = events[i];
    OwnedEvent o;
    o.kind = e.kind;
    o.estimated_start = e.estimated_start;
    o.run = e.run;
    o.instruction = e.instruction;
    o.delegate_op = e.delegate_op;
    o.delegate_index = e.delegate_index;
    o.name = e.name ? e.name : "";
    o.debug_name = e.debug_name ? e.debug_name : "";
    o.source = e.source ? e.source : "";
    o.start_ns = e.start_ns;
    o.end_ns = e.end_ns;
    out.push_back(std::move(o));
  }
  return out;
}

ProfileSummary summarize(const std::vector<OwnedEvent>& events) {
  ProfileSummary s;
  // Key: (instruction, delegate operator or kNoTraceIndex for the instruction itself).
  std::map<std::pair<uint32_t, uint32_t>, OperatorRow> rows;
  // Time of each delegate call's reported operators, per (run, instruction).
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> inside;
  std::set<uint32_t> has_ops;  // delegate calls with reported operators
  for (const OwnedEvent& e : events) {
    if (e.kind == TraceEventKind::Execute) {
      s.runs++;
      s.execute_total_ns += e.duration_ns();
      s.execute_min_ns = s.runs == 1 ? e.duration_ns() : std::min(s.execute_min_ns, e.duration_ns());
    }
    if (e.kind == TraceEventKind::DelegateOp) {
      inside[{e.run, e.instruction}] += e.duration_ns();
      has_ops.insert(e.instruction);
    }
  }
  for (const OwnedEvent& e : events) {
    if (!is_execute_part(e)) continue;
    const bool op = e.kind == TraceEventKind::DelegateOp;
    if (!op) s.instructions_total_ns += e.duration_ns();
    const bool delegate_call = !op && e.delegate_index != kNoTraceIndex;
    uint64_t self_ns = e.duration_ns();
    if (delegate_call && has_ops.count(e.instruction)) {
      // The call's own time: staging, layout conversion, XNNPACK's setup between operators.
      const uint64_t in = inside[{e.run, e.instruction}];
      self_ns = self_ns > in ? self_ns - in : 0;
    }
    OperatorRow& row = rows[{e.instruction, op ? e.delegate_op : kNoTraceIndex}];
    if (row.count == 0) {
      row.name = delegate_call && has_ops.count(e.instruction) ? e.name + " (outside operators)" : e.name;
      row.where = "#" + std::to_string(e.instruction) + (op ? "/" + std::to_string(e.delegate_op) : "");
      row.debug_name = e.debug_name;
      row.source = e.source;
    }
    row.count++;
    row.total_ns += self_ns;
  }
  for (auto& [key, row] : rows) s.rows.push_back(std::move(row));
  std::stable_sort(s.rows.begin(), s.rows.end(),
                   [](const OperatorRow& a, const OperatorRow& b) { return a.total_ns > b.total_ns; });
  return s;
}

std::string format_table(const ProfileSummary& s, size_t top) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%zu runs: execute mean %.3f ms, min %.3f ms; instructions %.3f ms per run\n",
                s.runs, s.runs ? s.execute_total_ns / 1e6 / s.runs : 0.0, s.execute_min_ns / 1e6,
                s.runs ? s.instructions_total_ns / 1e6 / s.runs : 0.0);
  out += line;
  std::snprintf(line, sizeof(line), "%-44s %-8s %6s %10s %7s  %s\n", "operator", "where", "count", "mean_us",
                "share", "debug name / source");
  out += line;
  const size_t n = top == 0 ? s.rows.size() : std::min(top, s.rows.size());
  for (size_t i = 0; i < n; ++i) {
    const OperatorRow& r = s.rows[i];
    const double share = s.instructions_total_ns ? 100.0 * r.total_ns / s.instructions_total_ns : 0.0;
    std::string where = r.debug_name;
    if (!r.source.empty()) where += (where.empty() ? "" : " @ ") + short_source(r.source);
    std::snprintf(line, sizeof(line), "%-44.44s %-8s %6zu %10.2f %6.1f%%  %s\n", r.name.c_str(), r.where.c_str(),
                  r.count, r.mean_us(), share, where.c_str());
    out += line;
  }
  if (n < s.rows.size()) {
    std::snprintf(line, sizeof(line), "(%zu more rows; --top 0 shows all)\n", s.rows.size() - n);
    out += line;
  }
  return out;
}

std::vector<OperatorRow> by_operator_type(const ProfileSummary& s) {
  std::map<std::string, OperatorRow> types;
  for (const OperatorRow& r : s.rows) {
    OperatorRow& t = types[r.name];
    t.name = r.name;
    t.where += (t.where.empty() ? "" : " ") + r.where;
    t.count += r.count;
    t.total_ns += r.total_ns;
  }
  std::vector<OperatorRow> out;
  for (auto& [name, row] : types) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const OperatorRow& a, const OperatorRow& b) { return a.total_ns > b.total_ns; });
  return out;
}

std::string format_type_table(const ProfileSummary& s, size_t top) {
  const std::vector<OperatorRow> types = by_operator_type(s);
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-44s %9s %12s %7s  %s\n", "by operator type", "calls/run", "ms/run", "share",
                "instances");
  out += line;
  const size_t n = top == 0 ? types.size() : std::min(top, types.size());
  const double runs = s.runs ? static_cast<double>(s.runs) : 1.0;
  for (size_t i = 0; i < n; ++i) {
    const OperatorRow& t = types[i];
    const double share = s.instructions_total_ns ? 100.0 * t.total_ns / s.instructions_total_ns : 0.0;
    std::snprintf(line, sizeof(line), "%-44.44s %9.1f %12.3f %6.1f%%  %.60s%s\n", t.name.c_str(), t.count / runs,
                  t.total_ns / 1e6 / runs, share, t.where.c_str(), t.where.size() > 60 ? "..." : "");
    out += line;
  }
  return out;
}

std::string chrome_trace_json(const std::vector<OwnedEvent>& events) {
  using nlohmann::json;
  uint64_t origin = UINT64_MAX;
  for (const OwnedEvent& e : events) origin = std::min(origin, e.start_ns);
  json trace = json::array();
  trace.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "ember"}}}});
  trace.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "method"}}}});
  for (const OwnedEvent& e : events) {
    json args = {{"kind", kind_name(e.kind)}, {"run", e.run}};
    if (e.instruction != kNoTraceIndex) args["instruction"] = e.instruction;
    if (e.kind == TraceEventKind::DelegateOp) {
      args["delegate_op"] = e.delegate_op;
      args["estimated_start"] = e.estimated_start;
    }
    if (e.delegate_index != kNoTraceIndex) args["delegate"] = e.delegate_index;
    if (!e.debug_name.empty()) args["debug_name"] = e.debug_name;
    if (!e.source.empty()) args["source"] = e.source;
    trace.push_back({{"ph", "X"},
                     {"name", e.name},
                     {"cat", kind_name(e.kind)},
                     {"ts", (e.start_ns - origin) / 1e3},
                     {"dur", e.duration_ns() / 1e3},
                     {"pid", 1},
                     {"tid", 1},
                     {"args", args}});
  }
  json root = {{"traceEvents", trace}, {"displayTimeUnit", "ns"}};
  return root.dump(1);
}

std::string timeline_svg(const std::vector<OwnedEvent>& events, uint32_t run) {
  uint64_t t0 = UINT64_MAX, t1 = 0;
  for (const OwnedEvent& e : events) {
    if (e.run != run || !(is_execute_part(e) || e.kind == TraceEventKind::Execute)) continue;
    t0 = std::min(t0, e.start_ns);
    t1 = std::max(t1, e.end_ns);
  }
  const double width = 1200, left = 110, row_h = 26, top = 40;
  const double span = t1 > t0 ? static_cast<double>(t1 - t0) : 1.0;
  const double scale = (width - left - 10) / span;
  std::string svg;
  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"monospace\" "
                "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                "<text x=\"10\" y=\"20\">run %u: %.3f ms (hover a box for its name)</text>\n"
                "<text x=\"10\" y=\"%.0f\">thread 1</text>\n<text x=\"10\" y=\"%.0f\">  delegate ops</text>\n",
                width, top + 3 * row_h + 20, run, t0 <= t1 ? span / 1e6 : 0.0, top + row_h * 0.65,
                top + row_h * 1.65);
  svg += buf;
  size_t color = 0;
  const char* palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};
  for (const OwnedEvent& e : events) {
    if (e.run != run || !is_execute_part(e)) continue;
    const bool op = e.kind == TraceEventKind::DelegateOp;
    const double x = left + (e.start_ns - t0) * scale;
    const double w = std::max(1.0, e.duration_ns() * scale);
    const double y = top + (op ? row_h : 0);
    std::string label = e.name + " " + std::to_string(e.duration_ns() / 1e3) + " us";
    if (!e.debug_name.empty()) label += " [" + e.debug_name + "]";
    std::snprintf(buf, sizeof(buf),
                  "<g><title>%s</title><rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
                  "stroke=\"white\" stroke-width=\"0.5\"/>",
                  escape_xml(label).c_str(), x, y, w, row_h - 4, palette[color++ % 8]);
    svg += buf;
    // Names only where they fit (about 7 px per character).
    const size_t fit = static_cast<size_t>(w / 7);
    if (fit >= 4) {
      std::string text = e.name.size() > fit ? e.name.substr(0, fit - 1) + "~" : e.name;
      std::snprintf(buf, sizeof(buf), "<text x=\"%.2f\" y=\"%.2f\" fill=\"white\">%s</text>", x + 2,
                    y + row_h * 0.6, escape_xml(text).c_str());
      svg += buf;
    }
    svg += "</g>\n";
  }
  // A time axis in milliseconds.
  for (int tick = 0; tick <= 10; ++tick) {
    const double x = left + (width - left - 10) * tick / 10.0;
    std::snprintf(buf, sizeof(buf),
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/><text x=\"%.1f\" "
                  "y=\"%.1f\" fill=\"#555\">%.3f</text>\n",
                  x, top + 2 * row_h, x, top + 2 * row_h + 5, x - 10, top + 2 * row_h + 18, span * tick / 10.0 / 1e6);
    svg += buf;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tools
}  // namespace ember
