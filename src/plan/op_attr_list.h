// Iteration over the op catalogue's attribute lists (REMAT_ATTRS((name, default), ...)), in
// the preprocessor alone: header-only, for every build (host, runtime, firmware).
//
// REMAT_ATTR_LIST_FOR_EACH(M, ...) expands M(index, (name, default)) for each element of a list
// of at most 10 parenthesised pairs, index counting from 0, and to nothing for an empty list.
#ifndef REMAT_PLAN_OP_ATTR_LIST_H_
#define REMAT_PLAN_OP_ATTR_LIST_H_

#define REMAT_ATTR_LIST_CAT(a, b) REMAT_ATTR_LIST_CAT_(a, b)
#define REMAT_ATTR_LIST_CAT_(a, b) a##b

// How many elements, 1 to 10 (an empty list counts 1 here: told apart below).
#define REMAT_ATTR_LIST_COUNT(...) \
  REMAT_ATTR_LIST_COUNT_(__VA_ARGS__, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define REMAT_ATTR_LIST_COUNT_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, n, ...) n

// 1 when the list's first element is parenthesised (every element is), 0 when the list is
// empty: the probe expands only when a parenthesis follows it.
#define REMAT_ATTR_LIST_FIRST(...) REMAT_ATTR_LIST_FIRST_(__VA_ARGS__, ~)
#define REMAT_ATTR_LIST_FIRST_(a, ...) a
#define REMAT_ATTR_LIST_PROBE(...) ~, 1
#define REMAT_ATTR_LIST_SECOND(...) REMAT_ATTR_LIST_SECOND_(__VA_ARGS__)
#define REMAT_ATTR_LIST_SECOND_(a, b, ...) b
#define REMAT_ATTR_LIST_NONEMPTY(...) REMAT_ATTR_LIST_NONEMPTY_(REMAT_ATTR_LIST_FIRST(__VA_ARGS__))
#define REMAT_ATTR_LIST_NONEMPTY_(first) REMAT_ATTR_LIST_SECOND(REMAT_ATTR_LIST_PROBE first, 0, ~)

#define REMAT_ATTR_LIST_SIZE(...)                                                   \
  REMAT_ATTR_LIST_CAT(REMAT_ATTR_LIST_SIZE_, REMAT_ATTR_LIST_NONEMPTY(__VA_ARGS__)) \
  (REMAT_ATTR_LIST_COUNT(__VA_ARGS__))
#define REMAT_ATTR_LIST_SIZE_0(n) 0
#define REMAT_ATTR_LIST_SIZE_1(n) n

#define REMAT_ATTR_LIST_FOR_EACH(M, ...) \
  REMAT_ATTR_LIST_CAT(REMAT_ATTR_LIST_EACH_, REMAT_ATTR_LIST_SIZE(__VA_ARGS__))(M, __VA_ARGS__)
#define REMAT_ATTR_LIST_EACH_0(M, ...)
#define REMAT_ATTR_LIST_EACH_1(M, a) M(0, a)
#define REMAT_ATTR_LIST_EACH_2(M, a, b) M(0, a) M(1, b)
#define REMAT_ATTR_LIST_EACH_3(M, a, b, c) M(0, a) M(1, b) M(2, c)
#define REMAT_ATTR_LIST_EACH_4(M, a, b, c, d) M(0, a) M(1, b) M(2, c) M(3, d)
#define REMAT_ATTR_LIST_EACH_5(M, a, b, c, d, e) M(0, a) M(1, b) M(2, c) M(3, d) M(4, e)
#define REMAT_ATTR_LIST_EACH_6(M, a, b, c, d, e, f) M(0, a) M(1, b) M(2, c) M(3, d) M(4, e) M(5, f)
#define REMAT_ATTR_LIST_EACH_7(M, a, b, c, d, e, f, g) \
  M(0, a) M(1, b) M(2, c) M(3, d) M(4, e) M(5, f) M(6, g)
#define REMAT_ATTR_LIST_EACH_8(M, a, b, c, d, e, f, g, h) \
  M(0, a) M(1, b) M(2, c) M(3, d) M(4, e) M(5, f) M(6, g) M(7, h)
#define REMAT_ATTR_LIST_EACH_9(M, a, b, c, d, e, f, g, h, i) \
  M(0, a) M(1, b) M(2, c) M(3, d) M(4, e) M(5, f) M(6, g) M(7, h) M(8, i)
#define REMAT_ATTR_LIST_EACH_10(M, a, b, c, d, e, f, g, h, i, j) \
  M(0, a) M(1, b) M(2, c) M(3, d) M(4, e) M(5, f) M(6, g) M(7, h) M(8, i) M(9, j)

// An element's parts: REMAT_ATTR_LIST_NAME((lr, 1e-3f)) is lr, ..._NAME_STRING "lr",
// ..._DEFAULT 1e-3f.
#define REMAT_ATTR_LIST_NAME(pair) REMAT_ATTR_LIST_NAME_ pair
#define REMAT_ATTR_LIST_NAME_(name, fallback) name
#define REMAT_ATTR_LIST_NAME_STRING(pair) REMAT_ATTR_LIST_STRING(REMAT_ATTR_LIST_NAME(pair))
#define REMAT_ATTR_LIST_STRING(x) REMAT_ATTR_LIST_STRING_(x)
#define REMAT_ATTR_LIST_STRING_(x) #x
#define REMAT_ATTR_LIST_DEFAULT(pair) REMAT_ATTR_LIST_DEFAULT_ pair
#define REMAT_ATTR_LIST_DEFAULT_(name, fallback) fallback

#endif  // REMAT_PLAN_OP_ATTR_LIST_H_
