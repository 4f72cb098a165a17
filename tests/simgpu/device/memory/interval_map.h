// interval_map.h: a map from disjoint half-open address intervals [lo, hi) to values.
//
// Used for what is mapped where (memory_map.h) and for the last reader and writer of each byte
// range (hazards.h). Operations cost O(log n + k) for k intervals touched: ops touch whole
// allocations, so k stays small.
//
// Thread safety: none; the owner locks.
#ifndef SIMGPU_DEVICE_INTERVAL_MAP_H_
#define SIMGPU_DEVICE_INTERVAL_MAP_H_

#include <cstdint>
#include <iterator>
#include <map>
#include <utility>

namespace simgpu {

template <typename V>
class IntervalMap {
 public:
  struct Segment {
    uint64_t hi;
    V value;
  };
  using Map = std::map<uint64_t, Segment>;  // keyed by lo

  // Sets [lo, hi) to `value`, replacing whatever was there.
  void Assign(uint64_t lo, uint64_t hi, const V& value) {
    if (lo >= hi) return;
    Erase(lo, hi);
    map_.emplace(lo, Segment{hi, value});
  }

  // Removes [lo, hi), splitting intervals that straddle its ends.
  void Erase(uint64_t lo, uint64_t hi) {
    if (lo >= hi) return;
    Split(lo);
    Split(hi);
    map_.erase(map_.lower_bound(lo), map_.lower_bound(hi));
  }

  // Calls fn(lo, hi, value&) for each stored piece of [lo, hi), in address order, after
  // splitting intervals at lo and hi so that each piece lies inside [lo, hi).
  template <typename Fn>
  void ForEachSplit(uint64_t lo, uint64_t hi, Fn fn) {
    if (lo >= hi) return;
    Split(lo);
    Split(hi);
    for (auto it = map_.lower_bound(lo); it != map_.end() && it->first < hi; ++it) {
      fn(it->first, it->second.hi, it->second.value);
    }
  }

  // Calls fn(lo, hi, const value&) for each stored interval overlapping [lo, hi), unsplit.
  template <typename Fn>
  void ForEachOverlap(uint64_t lo, uint64_t hi, Fn fn) const {
    if (lo >= hi) return;
    auto it = map_.upper_bound(lo);
    if (it != map_.begin() && std::prev(it)->second.hi > lo) --it;
    for (; it != map_.end() && it->first < hi; ++it) {
      fn(it->first, it->second.hi, it->second.value);
    }
  }

  // The interval containing `addr`, or end().
  typename Map::const_iterator Find(uint64_t addr) const {
    auto it = map_.upper_bound(addr);
    if (it == map_.begin()) return map_.end();
    --it;
    return it->second.hi > addr ? it : map_.end();
  }

  // True when every byte of [lo, hi) lies in some interval whose value satisfies `pred`.
  // Otherwise *first_bad is the lowest address that does not.
  template <typename Pred>
  bool Covers(uint64_t lo, uint64_t hi, Pred pred, uint64_t* first_bad) const {
    uint64_t at = lo;
    while (at < hi) {
      auto it = Find(at);
      if (it == map_.end() || !pred(it->second.value)) {
        *first_bad = at;
        return false;
      }
      at = it->second.hi;
    }
    return true;
  }

  typename Map::const_iterator end() const { return map_.end(); }
  size_t size() const { return map_.size(); }

 private:
  // Makes `at` an interval boundary if it falls strictly inside an interval.
  void Split(uint64_t at) {
    auto it = map_.upper_bound(at);
    if (it == map_.begin()) return;
    --it;
    if (it->first < at && it->second.hi > at) {
      Segment right{it->second.hi, it->second.value};
      it->second.hi = at;
      map_.emplace_hint(std::next(it), at, right);
    }
  }

  Map map_;
};

}  // namespace simgpu

#endif  // SIMGPU_DEVICE_INTERVAL_MAP_H_
