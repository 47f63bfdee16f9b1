// A restricted unpickler for torch.save files: it turns one pickle into a small tree of values and
// never calls anything. GLOBAL/STACK_GLOBAL resolve only names on an allowlist (what a state dict
// needs: OrderedDict, the torch tensor-rebuild functions, the typed storage classes); REDUCE,
// NEWOBJ and BUILD are recorded symbolically. Anything else (os.system, builtins.eval,
// torch.storage._load_from_bytes which would unpickle again, ...) is a bertrt::Error naming it.
//
// Opcodes (pickletools.py, PEP 307 protocol 2, PEP 3154 protocol 4): PROTO, FRAME (tolerated: its
// bytes are read inline), STOP, NONE, NEWTRUE/NEWFALSE, BININT/BININT1/BININT2, LONG1/LONG4,
// BINFLOAT, SHORT_BINUNICODE/BINUNICODE/BINUNICODE8, SHORT_BINSTRING/BINSTRING,
// SHORT_BINBYTES/BINBYTES/BINBYTES8, EMPTY_TUPLE/TUPLE1/2/3/TUPLE, EMPTY_LIST/LIST/APPEND/APPENDS,
// EMPTY_DICT/DICT/SETITEM/SETITEMS, MARK, POP, POP_MARK, BINPUT/LONG_BINPUT/MEMOIZE,
// BINGET/LONG_BINGET, GLOBAL, STACK_GLOBAL, REDUCE, NEWOBJ, BUILD, BINPERSID. Others (the text
// protocol-0 opcodes, PERSID, INST/OBJ, EXT*, sets, protocol 5 buffers) are refused by name.
//
// Bounds: every length is checked against the bytes left before anything is allocated, each opcode
// makes at most one node (memory is linear in the pickle size), memo indexes must have been set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace bertrt::convert::pickle {

enum class Kind {
  None, Bool, Int, BigInt, Float, String, Bytes, Tuple, List, Dict,
  Global,        // an allowlisted name, e.g. "collections.OrderedDict"
  Reduce,        // REDUCE or NEWOBJ: items = {callable, args}; never called
  PersistentId,  // BINPERSID: items = {pid}; torch uses it for storages
};
const char* kind_name(Kind kind);

struct Value {
  Kind kind = Kind::None;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  // String (UTF-8 as stored), Bytes, Global ("module.name"), BigInt (two's complement, little-endian).
  std::string text;
  std::vector<Value*> items;                     // Tuple, List; Reduce {callable, args}; PersistentId {pid}
  std::vector<std::pair<Value*, Value*>> entries;  // Dict, in insertion order (duplicates replace)
  Value* state = nullptr;                          // the BUILD state applied to this object, if any

  bool is_global(const char* qualified_name) const {
    return kind == Kind::Global && text == qualified_name;
  }
  // The callable of a Reduce as "module.name" ("" when it is not a Global).
  std::string reduce_callable() const;
};

// One parsed pickle. Owns every node (so cyclic memo references cannot leak).
struct Document {
  const Value* root = nullptr;
  std::vector<const Value*> persistent_ids;  // every BINPERSID node, in pickle order
  size_t end = 0;                            // offset just past STOP
  std::vector<std::unique_ptr<Value>> nodes;
};

// True for the names a state dict needs (see pickle.cpp for the list and why each is safe).
bool is_allowed_global(const std::string& qualified_name);
// The allowlist, comma-separated, for messages.
std::string allowed_globals_text();

// Parses the pickle that starts at data[offset] (data has `size` bytes; the pickle must end with
// STOP inside them). `what` names the source in messages, e.g. "model.bin (archive/data.pkl)".
// Throws bertrt::Error "WHAT: pickle byte N: ..." on a truncated pickle, an unknown or refused
// opcode, a refused global, a memo index never set, a stack underflow or a mis-typed operand.
Document unpickle(const uint8_t* data, size_t size, size_t offset, const std::string& what);

}  // namespace bertrt::convert::pickle
