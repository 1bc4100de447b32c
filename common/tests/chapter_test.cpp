#include <doctest/doctest.h>

#include "chapter.hpp"

using namespace rdma::testing;

TEST_CASE("console blocks should give commands, continuations, expected output and markers") {
  const char* md = R"(# Title
```console
$ echo one \
    two
one two
$ true
```
<!-- exit: 1 -->
```console
$ false
```
<!-- norun: needs root -->

```console
$ sudo reboot
```
```cpp
$ not a command
```
)";
  const auto blocks = parse_chapter(md);
  REQUIRE(blocks.size() == 3);
  REQUIRE(blocks[0].commands.size() == 2);
  CHECK(blocks[0].commands[0].command == "echo one      two");
  CHECK(blocks[0].commands[0].expected == std::vector<std::string>{"one two"});
  CHECK(blocks[0].commands[0].line == 3);
  CHECK(blocks[0].commands[1].expected.empty());
  CHECK(blocks[1].commands[0].expected_exit == 1);
  CHECK_FALSE(blocks[2].run);
  CHECK(blocks[2].norun_reason == "needs root");
}

TEST_CASE("an exit marker with one code per command should give each command its own") {
  const auto blocks = parse_chapter("<!-- exit: 1 0 -->\n```console\n$ server &\n$ client\n```\n"
                                    "<!-- exit: 3 -->\n```console\n$ a\n$ b\n```\n");
  REQUIRE(blocks.size() == 2);
  CHECK(blocks[0].commands[0].expected_exit == 1);
  CHECK(blocks[0].commands[1].expected_exit == 0);
  CHECK(blocks[1].commands[0].expected_exit == 0);
  CHECK(blocks[1].commands[1].expected_exit == 3);
}

TEST_CASE("a kernel marker should name the block's kernel, alone or above an exit marker, and no other block's") {
  const auto blocks = parse_chapter("<!-- kernel: 6.1 -->\n```console\n$ a\n```\n"
                                    "<!-- kernel: 6.12 -->\n<!-- exit: 1 -->\n```console\n$ b\n```\n"
                                    "Prose.\n\n<!-- exit: 2 -->\n```console\n$ c\n```\n"
                                    "```console\n$ d\n```\n");
  REQUIRE(blocks.size() == 4);
  CHECK(blocks[0].kernel == "6.1");
  CHECK(blocks[1].kernel == "6.12");
  CHECK(blocks[1].commands[0].expected_exit == 1);
  CHECK(blocks[2].kernel.empty());
  CHECK(blocks[2].commands[0].expected_exit == 2);
  CHECK(blocks[3].kernel.empty());
}

TEST_CASE("a provider marker should name the block's provider, stacked with kernel and exit markers in any order") {
  const auto blocks = parse_chapter("<!-- provider: siw -->\n```console\n$ a\n```\n"
                                    "<!-- kernel: 6.12 -->\n<!-- provider: siw -->\n<!-- exit: 1 -->\n```console\n$ b\n```\n"
                                    "<!-- provider: siw -->\nProse between.\n```console\n$ c\n```\n"
                                    "<!-- exit: 2 -->\n<!-- provider: siw -->\n```console\n$ d\n```\n");
  REQUIRE(blocks.size() == 4);
  CHECK(blocks[0].provider == "siw");
  CHECK(blocks[0].kernel.empty());
  CHECK(blocks[1].provider == "siw");
  CHECK(blocks[1].kernel == "6.12");
  CHECK(blocks[1].commands[0].expected_exit == 1);
  CHECK(blocks[2].provider == "rxe");  // a marker above prose is that prose's, not the block's
  CHECK(blocks[3].provider == "siw");
  CHECK(blocks[3].commands[0].expected_exit == 2);
}

TEST_CASE("varying fields should be masked: GUIDs, link-local GIDs, hex values, timings") {
  CHECK(mask_variable_fields("  node_guid      f8a4:c8ff:feb8:ec52") == "  node_guid      <guid>");
  CHECK(mask_variable_fields("[0] RoCE v2 dummy0   fe80::f8a4:c8ff:feb8:ec52") == "[0] RoCE v2 dummy0   fe80::<id>");
  CHECK(mask_variable_fields("rkey 0x1a2b, took 12.5 us ") == "rkey <hex>, took <time>");
  CHECK(mask_variable_fields("::ffff:192.0.2.1") == "::ffff:192.0.2.1");
  CHECK(mask_variable_fields("      [0] iWARP   -        fa36:6baa:c0c::") == "      [0] iWARP   -        <mac>::");
  CHECK(mask_variable_fields("client 127.0.0.1:45916: qp_num 0x12") == "client 127.0.0.1:<port>: qp_num <hex>");
}

TEST_CASE("output should match line by line, with ... standing for any lines") {
  std::string why;
  CHECK(output_matches({"a", "b"}, "a\nb\n", why));
  CHECK(output_matches({"a", "...", "d"}, "a\nb\nc\nd\n", why));
  CHECK(output_matches({"a", "..."}, "a\nb\nc\n", why));
  CHECK(output_matches({"...", "c"}, "a\nb\nc\n", why));
  CHECK(output_matches({"a", "...", "b", "...", "d"}, "a\nx\nb\nb\nd\n", why));
  CHECK(output_matches({"node f8a4:c8ff:feb8:ec52"}, "node 0000:1111:2222:3333\n", why));
}

TEST_CASE("a mismatch should say which line differs") {
  std::string why;
  CHECK_FALSE(output_matches({"a", "b"}, "a\nc\n", why));
  CHECK(why == "expected line 2: 'b', got: 'c'");
  CHECK_FALSE(output_matches({"a"}, "a\nextra\n", why));
  CHECK(why == "unexpected extra output: 'extra'");
  CHECK_FALSE(output_matches({"a", "b"}, "a\n", why));
  CHECK(why == "expected line 2: 'b', but the output ended");
  CHECK_FALSE(output_matches({"a", "...", "z"}, "a\nb\n", why));
}
