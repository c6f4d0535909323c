//===- TokenDataTest.cpp - Token files and the design's batch order -------===//
//
// Part of the zero-opt project, under the Apache License v2.0 with LLVM Exceptions.
//
//===----------------------------------------------------------------------===//

#include "zrt/Error.h"
#include "zrt/TokenData.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace zrt;

namespace {

std::string writeFile(const std::string &name, const std::string &bytes) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(TokenData, FormatsAreLittleEndian) {
  std::string path = writeFile("t16.bin", std::string("\x01\x02\x03\x04", 4));
  EXPECT_EQ(TokenData::load(path, "u8").size(), 4);
  TokenData u16 = TokenData::load(path, "u16");
  ASSERT_EQ(u16.size(), 2);
  EXPECT_EQ(u16.at(0), 0x0201u);
  EXPECT_EQ(u16.at(1), 0x0403u);
  TokenData u32 = TokenData::load(path, "u32");
  ASSERT_EQ(u32.size(), 1);
  EXPECT_EQ(u32.at(0), 0x04030201u);
  EXPECT_THROW(TokenData::load(path, "u24"), Error);
  std::string odd = writeFile("odd.bin", "abc");
  EXPECT_THROW(TokenData::load(odd, "u16"), Error);
  EXPECT_THROW(TokenData::load("/nonexistent/tokens", "u8"), Error);
}

TEST(TokenData, DesignOrder) {
  // L = 100 tokens 0..99, T = 8, global batch G = 4: sample g of step s is global
  // sample k = s*G + g and starts at (k*T) mod (L - T - 1) = ((s*4 + g)*8) mod 91.
  std::string bytes;
  for (int i = 0; i < 100; ++i)
    bytes.push_back((char)i);
  TokenData d = TokenData::load(writeFile("seq.bin", bytes), "u8");
  EXPECT_EQ(d.sampleStart(0, 8, false, 0), 0);
  EXPECT_EQ(d.sampleStart(3, 8, false, 0), 24);
  EXPECT_EQ(d.sampleStart(2 * 4 + 1, 8, false, 0), (9 * 8) % 91);
  EXPECT_EQ(d.sampleStart(3 * 4, 8, false, 0), (12 * 8) % 91);
  // Step 1, rank 1 of 2 with B = 2 takes samples 2 and 3 of the step (global 6 and
  // 7); targets are shifted.
  int64_t tokens[16], targets[16];
  d.fillBatch(1 * 4 + 2, 2, 8, false, 0, tokens, targets);
  EXPECT_EQ(tokens[0], (6 * 8) % 91);
  EXPECT_EQ(targets[0], (6 * 8) % 91 + 1);
  EXPECT_EQ(tokens[8], (7 * 8) % 91);
  EXPECT_EQ(targets[15], (7 * 8) % 91 + 8);
}

TEST(TokenData, LargeSampleCountsDoNotWrap) {
  // (k * T) mod (L - T - 1) for k near 2^63, where k * T wraps 64 bits: the
  // figures are Python's exact integer arithmetic.
  std::string bytes;
  for (int i = 0; i < 100; ++i)
    bytes.push_back((char)i);
  TokenData d = TokenData::load(writeFile("big.bin", bytes), "u8");
  EXPECT_EQ(d.sampleStart(int64_t(1) << 62, 8, false, 0), 32);
  EXPECT_EQ(d.sampleStart(INT64_MAX, 8, false, 0), 56);
  EXPECT_THROW(d.sampleStart(-1, 8, false, 0), Error);
}

TEST(TokenData, OnlyRegularFiles) {
  // A device and a fifo are refused at once (a fifo's open would wait for a writer).
  EXPECT_THROW(TokenData::load("/dev/zero", "u8"), Error);
  std::string fifo = ::testing::TempDir() + "/tokens.fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    TokenData::load(fifo, "u8");
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("is a fifo, not a regular file"), std::string::npos);
  }
}

TEST(TokenData, ShuffleIsSeededAndInRange) {
  std::string bytes(1000, 'x');
  TokenData d = TokenData::load(writeFile("shuffle.bin", bytes), "u8");
  bool differs = false;
  for (int g = 0; g < 50; ++g) {
    int64_t a = d.sampleStart(150 + g, 16, true, 7);
    EXPECT_EQ(a, d.sampleStart(150 + g, 16, true, 7)); // reproducible
    EXPECT_GE(a, 0);
    EXPECT_LT(a, 1000 - 16 - 1);
    differs |= a != d.sampleStart(150 + g, 16, true, 8);
  }
  EXPECT_TRUE(differs); // another seed, another order
}

TEST(TokenData, TooShortForOneSample) {
  TokenData d = TokenData::load(writeFile("short.bin", "abcdefghij"), "u8");
  try {
    d.sampleStart(0, 9, false, 0);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("the data has 10 tokens; a sample needs 11"),
              std::string::npos);
  }
}

} // namespace
