// SPDX-License-Identifier: MIT
// A tiny explicit-state model checker for hand-off protocols (test support, no external tool).
//
// Origin: written for txpath's tests/test_model_check.cpp; the method is plain explicit-state
// reachability (depth-first search over all interleavings with a visited-state set), as in
// SPIN/TLC-style checkers, reduced to what a GoogleTest needs.
//
// Model of computation. A model is a fixed set of threads; each thread is a small deterministic
// state machine whose every step is ONE atomic action on the shared state. The global state (the
// shared variables plus every thread's pc and locals) is one trivially copyable struct, hashed
// and compared byte-wise, so it must have unique object representations (no padding: use
// uint8_t fields and arrays). Execution is sequentially consistent: a run is an interleaving of
// whole steps. Nondeterminism comes only from the scheduler; a thread that waits (for a lock, for
// a flag) is simply not `enabled` until the wait can end.
//
// What is checked:
//   * `invariant(s)` at every reachable state (safety: mutual exclusion, no duplicate, order);
//   * at every terminal state (no thread enabled): every thread must be `at_rest` (else it is a
//     deadlock) and `quiescent_check(s)` must hold (e.g. "no packet stranded");
//   * optionally (Options::check_progress) that a terminal state is reachable from EVERY
//     reachable state — this catches livelocks such as a deferred run that reschedules itself
//     forever, which have no terminal state at all and so escape the terminal check.
// The first violation found ends the search and comes back with a counterexample: the sequence
// of (thread, step label) from the initial state (the DFS path, rebuilt from parent links).
//
// Bounds: the search is exhaustive for the model as configured (its number of threads and
// packets); `Options::max_states` only guards against a model that is bigger than intended, and
// hitting it is reported (Result::bound_hit), never silently treated as success.
//
// Model interface (checked by the concept below):
//   struct State;                                  // unique object representations
//   int threads() const;                           // number of model threads
//   State initial() const;
//   bool enabled(const State&, int t) const;       // may thread t take a step now?
//   bool at_rest(const State&, int t) const;       // may thread t legitimately stop here?
//   const char* step(State&, int t) const;         // take one step; returns a static label
//   std::string invariant(const State&) const;     // "" = fine, else what is violated
//   std::string quiescent_check(const State&) const;
//   std::string thread_name(int t) const;
//   std::string describe(const State&) const;      // one line, for counterexamples
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace txpath::mc {

template <class M>
concept InterleavingModel = requires(const M& m, typename M::State& s,
                                     const typename M::State& cs, int t) {
  requires std::is_trivially_copyable_v<typename M::State>;
  requires std::has_unique_object_representations_v<typename M::State>;
  { m.threads() } -> std::convertible_to<int>;
  { m.initial() } -> std::same_as<typename M::State>;
  { m.enabled(cs, t) } -> std::same_as<bool>;
  { m.at_rest(cs, t) } -> std::same_as<bool>;
  { m.step(s, t) } -> std::same_as<const char*>;
  { m.invariant(cs) } -> std::same_as<std::string>;
  { m.quiescent_check(cs) } -> std::same_as<std::string>;
  { m.thread_name(t) } -> std::same_as<std::string>;
  { m.describe(cs) } -> std::same_as<std::string>;
};

struct Options {
  size_t max_states = 4'000'000;  // a guard, not a bound of the check (see the header)
  bool check_progress = true;     // a terminal state must stay reachable from every state
};

struct TraceStep {
  int thread;
  const char* label;
};

struct Result {
  bool ok = true;
  bool bound_hit = false;
  std::string violation;          // what failed ("" when ok)
  std::vector<TraceStep> trace;   // from the initial state to the violating state
  std::vector<TraceStep> lasso;   // progress violations: some steps taken from there on
  std::string final_state;        // describe() of the violating state
  std::vector<std::string> thread_names;
  size_t states = 0;              // distinct global states reached
  size_t transitions = 0;         // steps taken (edges, including ones into known states)
  size_t terminal_states = 0;     // distinct states with no enabled thread
  size_t max_depth = 0;           // longest DFS path

  std::string format() const {
    std::string out;
    out += ok ? "OK" : ("VIOLATION: " + violation);
    out += "\n  states=" + std::to_string(states) + " transitions=" + std::to_string(transitions) +
           " terminal=" + std::to_string(terminal_states) +
           " max_depth=" + std::to_string(max_depth) + (bound_hit ? " (STATE BOUND HIT)" : "");
    auto name = [&](int t) {
      return t >= 0 && static_cast<size_t>(t) < thread_names.size() ? thread_names[t]
                                                                     : std::to_string(t);
    };
    if (!trace.empty() || !ok) {
      out += "\n  counterexample (" + std::to_string(trace.size()) + " steps):";
      for (size_t i = 0; i < trace.size(); ++i)
        out += "\n    " + std::to_string(i + 1) + ". " + name(trace[i].thread) + ": " +
               trace[i].label;
      if (!lasso.empty()) {
        out += "\n  ...and from there, forever (first " + std::to_string(lasso.size()) +
               " steps):";
        for (const auto& st : lasso) out += "\n       " + name(st.thread) + ": " + st.label;
      }
      if (!final_state.empty()) out += "\n  state: " + final_state;
    }
    return out;
  }
};

namespace detail {

template <class State>
struct StateHash {
  size_t operator()(const State& s) const noexcept {
    // FNV-1a over the object representation (unique: no padding, see the concept).
    unsigned char bytes[sizeof(State)];
    std::memcpy(bytes, &s, sizeof(State));
    uint64_t h = 1469598103934665603ull;
    for (unsigned char b : bytes) h = (h ^ b) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

template <class State>
struct StateEq {
  bool operator()(const State& a, const State& b) const noexcept {
    return std::memcmp(&a, &b, sizeof(State)) == 0;
  }
};

}  // namespace detail

template <InterleavingModel M>
Result check(const M& model, const Options& opt = {}) {
  using State = typename M::State;
  constexpr uint32_t kNone = ~0u;
  struct Parent {
    uint32_t from;
    int thread;
    const char* label;
  };
  struct Frame {
    uint32_t id;
    int next_thread;
  };

  const int nthreads = model.threads();
  Result r;
  for (int t = 0; t < nthreads; ++t) r.thread_names.push_back(model.thread_name(t));

  std::unordered_map<State, uint32_t, detail::StateHash<State>, detail::StateEq<State>> ids;
  std::vector<State> states;
  std::vector<Parent> parents;
  std::vector<std::pair<uint32_t, uint32_t>> edges;  // (from, to), for the progress check
  std::vector<uint8_t> terminal;

  auto path_to = [&](uint32_t id) {
    std::vector<TraceStep> tr;
    for (uint32_t cur = id; parents[cur].from != kNone; cur = parents[cur].from)
      tr.push_back({parents[cur].thread, parents[cur].label});
    std::reverse(tr.begin(), tr.end());
    return tr;
  };
  auto fail = [&](uint32_t id, std::string what) {
    r.ok = false;
    r.violation = std::move(what);
    r.trace = path_to(id);
    r.final_state = model.describe(states[id]);
    r.states = states.size();
    return r;
  };
  // Checks a newly reached state; returns "" or the violation.
  auto examine = [&](uint32_t id) -> std::string {
    const State& s = states[id];
    std::string bad = model.invariant(s);
    if (!bad.empty()) return bad;
    bool any = false;
    for (int t = 0; t < nthreads && !any; ++t) any = model.enabled(s, t);
    if (any) return {};
    terminal[id] = 1;
    ++r.terminal_states;
    for (int t = 0; t < nthreads; ++t)
      if (!model.at_rest(s, t)) return "deadlock: " + model.thread_name(t) + " can never move";
    return model.quiescent_check(s);
  };

  const State init = model.initial();
  ids.emplace(init, 0);
  states.push_back(init);
  parents.push_back({kNone, -1, nullptr});
  terminal.push_back(0);
  if (std::string bad = examine(0); !bad.empty()) return fail(0, std::move(bad));

  std::vector<Frame> stack{{0, 0}};
  while (!stack.empty()) {
    r.max_depth = std::max(r.max_depth, stack.size() - 1);
    Frame& f = stack.back();
    int t = f.next_thread;
    while (t < nthreads && !model.enabled(states[f.id], t)) ++t;
    if (t >= nthreads) {
      stack.pop_back();
      continue;
    }
    f.next_thread = t + 1;
    const uint32_t from = f.id;
    State next = states[from];  // a copy: `states` may grow below
    const char* label = model.step(next, t);
    ++r.transitions;
    auto [it, inserted] = ids.try_emplace(next, static_cast<uint32_t>(states.size()));
    if (opt.check_progress) edges.emplace_back(from, it->second);
    if (!inserted) continue;
    if (states.size() >= opt.max_states) {
      r.ok = false;
      r.bound_hit = true;
      r.violation = "state bound reached before the search finished (model larger than intended)";
      r.states = states.size();
      return r;
    }
    const uint32_t id = it->second;
    states.push_back(next);
    parents.push_back({from, t, label});
    terminal.push_back(0);
    if (std::string bad = examine(id); !bad.empty()) return fail(id, std::move(bad));
    stack.push_back({id, 0});  // `f` is dead from here on
  }
  r.states = states.size();

  if (opt.check_progress) {
    // Backward reachability from the terminal states over the reversed edges (CSR layout).
    const size_t n = states.size();
    std::vector<uint32_t> start(n + 1, 0), rev(edges.size());
    for (const auto& e : edges) ++start[e.second + 1];
    for (size_t i = 0; i < n; ++i) start[i + 1] += start[i];
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (const auto& e : edges) rev[fill[e.second]++] = e.first;
    std::vector<uint8_t> good(n, 0);
    std::vector<uint32_t> work;
    for (uint32_t i = 0; i < n; ++i)
      if (terminal[i]) good[i] = 1, work.push_back(i);
    while (!work.empty()) {
      const uint32_t v = work.back();
      work.pop_back();
      for (uint32_t k = start[v]; k < start[v + 1]; ++k)
        if (!good[rev[k]]) good[rev[k]] = 1, work.push_back(rev[k]);
    }
    for (uint32_t i = 0; i < n; ++i) {
      if (good[i]) continue;
      // Every successor of a bad state is bad too, so any run from here shows the livelock.
      Result bad = fail(i, "no quiescent state is reachable from here (livelock)");
      State s = states[i];
      for (int k = 0; k < 24; ++k) {
        int t = 0;
        while (t < nthreads && !model.enabled(s, t)) ++t;
        if (t >= nthreads) break;
        bad.lasso.push_back({t, model.step(s, t)});
      }
      return bad;
    }
  }
  return r;
}

}  // namespace txpath::mc
