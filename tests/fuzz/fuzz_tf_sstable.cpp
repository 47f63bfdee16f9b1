// The leveldb table reader of TF .index files, from memory: footer, index block, data blocks
// (restart arrays, prefix compression), block trailers (crc32c, snappy decompression).
#include "convert/sstable.h"
#include "fuzz_target.h"

BERTRT_FUZZ_TARGET(tf_sstable) { (void)bertrt::convert::read_sstable(data, size, "fuzz.index"); }
