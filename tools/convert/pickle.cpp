#include "convert/pickle.h"

#include <cstring>
#include <unordered_map>

#include "core/error.h"

namespace bertrt::convert::pickle {
namespace {

// What torch.save writes for a state dict, and nothing that can run code when "applied": the
// storage classes and rebuild functions only ever get a persistent id, ints and tuples, and we
// never call them anyway. torch.storage._load_from_bytes is NOT here: it unpickles nested bytes.
const char* const kAllowedGlobals[] = {
    "collections.OrderedDict",
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
    "torch.FloatStorage",
    "torch.DoubleStorage",
    "torch.HalfStorage",
    "torch.BFloat16Storage",
    "torch.LongStorage",
    "torch.IntStorage",
    "torch.ShortStorage",
    "torch.CharStorage",
    "torch.ByteStorage",
    "torch.BoolStorage",
};

// Opcode bytes (CPython Lib/pickle.py).
enum Op : uint8_t {
  MARK = '(', STOP = '.', POP = '0', POP_MARK = '1', BINFLOAT = 'G', BININT = 'J', BININT1 = 'K',
  BININT2 = 'M', NONE = 'N', BINPERSID = 'Q', REDUCE = 'R', BINSTRING = 'T', SHORT_BINSTRING = 'U',
  BINUNICODE = 'X', APPEND = 'a', BUILD = 'b', GLOBAL = 'c', DICT = 'd', EMPTY_DICT = '}',
  APPENDS = 'e', BINGET = 'h', LONG_BINGET = 'j', LIST = 'l', EMPTY_LIST = ']', BINPUT = 'q',
  LONG_BINPUT = 'r', SETITEM = 's', TUPLE = 't', EMPTY_TUPLE = ')', SETITEMS = 'u',
  PROTO = 0x80, NEWOBJ = 0x81, TUPLE1 = 0x85, TUPLE2 = 0x86, TUPLE3 = 0x87, NEWTRUE = 0x88,
  NEWFALSE = 0x89, LONG1 = 0x8a, LONG4 = 0x8b, BINBYTES = 'B', SHORT_BINBYTES = 'C',
  SHORT_BINUNICODE = 0x8c, BINUNICODE8 = 0x8d, BINBYTES8 = 0x8e, STACK_GLOBAL = 0x93,
  MEMOIZE = 0x94, FRAME = 0x95,
};

// Names of opcodes we refuse, so the message says what was found.
const char* refused_opcode_name(uint8_t op) {
  switch (op) {
    case 'I': return "INT";
    case 'L': return "LONG";
    case 'F': return "FLOAT";
    case 'S': return "STRING";
    case 'V': return "UNICODE";
    case 'P': return "PERSID";
    case 'g': return "GET";
    case 'p': return "PUT";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case '2': return "DUP";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x92: return "NEWOBJ_EX";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    default: return nullptr;
  }
}

class Unpickler {
 public:
  Unpickler(const uint8_t* data, size_t size, size_t offset, const std::string& what)
      : data_(data), size_(size), pos_(offset), what_(what) {}

  Document run() {
    if (pos_ >= size_) fail("{}: pickle byte {}: no pickle here (file ends)", what_, pos_);
    for (;;) {
      op_pos_ = pos_;
      const uint8_t op = read_u8();
      if (op == STOP) break;
      step(op);
    }
    doc_.root = pop();  // as Python's load_stop: the top of the stack is the result
    doc_.end = pos_;
    return std::move(doc_);
  }

 private:
  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> format, Args&&... args) const {
    fail("{}: pickle byte {}: {}", what_, op_pos_, fmt::format(format, std::forward<Args>(args)...));
  }

  // --- reading operands, always bounds-checked first ---
  void need(uint64_t n) const {
    if (n > size_ - pos_)
      error("truncated: needs {} more bytes, {} left", n, size_ - pos_);
  }
  uint8_t read_u8() {
    need(1);
    return data_[pos_++];
  }
  template <typename T>
  T read_le() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, data_ + pos_, sizeof v);  // pickle integers are little-endian; so is the host
    pos_ += sizeof v;
    return v;
  }
  std::string read_bytes(uint64_t n) {
    need(n);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  std::string read_line() {  // GLOBAL's "module\n" and "name\n"
    const void* nl = std::memchr(data_ + pos_, '\n', size_ - pos_);
    if (!nl) error("truncated: GLOBAL name has no newline");
    const size_t n = static_cast<const uint8_t*>(nl) - (data_ + pos_);
    std::string s = read_bytes(n);
    ++pos_;
    return s;
  }

  // --- nodes and the stack ---
  Value* make(Kind kind) {
    doc_.nodes.push_back(std::make_unique<Value>());
    doc_.nodes.back()->kind = kind;
    return doc_.nodes.back().get();
  }
  void push(Value* v) { stack_.push_back(v); }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Value* pop() {
    if (stack_.size() <= floor()) error("stack underflow");
    Value* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value* top() {
    if (stack_.size() <= floor()) error("stack underflow");
    return stack_.back();
  }
  std::vector<Value*> pop_mark() {
    if (marks_.empty()) error("no MARK to pop to");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Value* tuple_of(std::vector<Value*> items) {
    Value* t = make(Kind::Tuple);
    t->items = std::move(items);
    return t;
  }
  Value* string_of(Kind kind, std::string s) {
    Value* v = make(kind);
    v->text = std::move(s);
    return v;
  }
  Value* int_of(int64_t i) {
    Value* v = make(Kind::Int);
    v->integer = i;
    return v;
  }
  // LONG1/LONG4: n bytes of little-endian two's complement.
  Value* long_of(const std::string& bytes) {
    const size_t n = bytes.size();
    bool fits = n <= 8;
    if (!fits) {  // wider encodings still fit when the extra bytes are pure sign extension
      const uint8_t sign = (static_cast<uint8_t>(bytes[7]) & 0x80) ? 0xff : 0x00;
      fits = true;
      for (size_t k = 8; k < n; ++k) fits = fits && static_cast<uint8_t>(bytes[k]) == sign;
    }
    if (!fits) return string_of(Kind::BigInt, bytes);
    uint64_t u = 0;
    const size_t m = n < 8 ? n : 8;
    for (size_t k = 0; k < m; ++k) u |= uint64_t{static_cast<uint8_t>(bytes[k])} << (8 * k);
    if (m > 0 && m < 8 && (static_cast<uint8_t>(bytes[m - 1]) & 0x80)) u |= ~uint64_t{0} << (8 * m);
    int64_t i;
    std::memcpy(&i, &u, sizeof i);
    return int_of(i);
  }
  Value* global_of(const std::string& module, const std::string& name) {
    const std::string q = module + "." + name;
    if (!is_allowed_global(q))
      fail("{}: pickle global '{}' is not allowed (a state dict needs only {})", what_, q,
           allowed_globals_text());
    return string_of(Kind::Global, q);
  }
  void set_item(Value* dict, Value* key, Value* value) {
    if (dict->kind != Kind::Dict) error("SETITEM(S) on a {}, expected a dict", kind_name(dict->kind));
    dict->entries.emplace_back(key, value);
  }
  void append(Value* list, Value* item) {
    if (list->kind != Kind::List) error("APPEND(S) on a {}, expected a list", kind_name(list->kind));
    list->items.push_back(item);
  }
  // REDUCE/NEWOBJ: recorded, never called. OrderedDict() becomes an (ordered) dict so the
  // SETITEMS that follow fill it, as pickle does for collections.OrderedDict.__reduce__.
  Value* apply(Value* callable, Value* args, const char* opname) {
    if (callable->kind != Kind::Global) error("{} of a {}, expected a global", opname, kind_name(callable->kind));
    if (args->kind != Kind::Tuple) error("{} arguments are a {}, expected a tuple", opname, kind_name(args->kind));
    if (callable->text == "collections.OrderedDict" && args->items.empty()) return make(Kind::Dict);
    Value* r = make(Kind::Reduce);
    r->items = {callable, args};
    return r;
  }
  void memo_put(uint64_t index) {
    Value* v = top();
    memo_[index] = v;
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) error("memo index {} was never set ({} entries)", index, memo_.size());
    push(it->second);
  }

  void step(uint8_t op) {
    switch (op) {
      case PROTO: {
        const uint8_t proto = read_u8();
        if (proto > 5) error("pickle protocol {} is newer than 5", proto);
        break;
      }
      case FRAME: need(read_le<uint64_t>()); break;  // framing only groups opcodes; read inline
      case MARK: marks_.push_back(stack_.size()); break;
      case POP:
        if (!marks_.empty() && stack_.size() == marks_.back()) marks_.pop_back();  // pops a MARK
        else pop();
        break;
      case POP_MARK: pop_mark(); break;
      case NONE: push(make(Kind::None)); break;
      case NEWTRUE:
      case NEWFALSE: {
        Value* v = make(Kind::Bool);
        v->boolean = op == NEWTRUE;
        push(v);
        break;
      }
      case BININT: push(int_of(read_le<int32_t>())); break;
      case BININT1: push(int_of(read_u8())); break;
      case BININT2: push(int_of(read_le<uint16_t>())); break;
      case LONG1: push(long_of(read_bytes(read_u8()))); break;
      case LONG4: {
        const int32_t n = read_le<int32_t>();
        if (n < 0) error("LONG4 with negative length {}", n);
        push(long_of(read_bytes(static_cast<uint64_t>(n))));
        break;
      }
      case BINFLOAT: {  // big-endian IEEE double
        need(8);
        uint64_t u = 0;
        for (int k = 0; k < 8; ++k) u = (u << 8) | data_[pos_ + k];
        pos_ += 8;
        Value* v = make(Kind::Float);
        std::memcpy(&v->number, &u, sizeof u);
        push(v);
        break;
      }
      case SHORT_BINUNICODE: push(string_of(Kind::String, read_bytes(read_u8()))); break;
      case BINUNICODE: push(string_of(Kind::String, read_bytes(read_le<uint32_t>()))); break;
      case BINUNICODE8: push(string_of(Kind::String, read_bytes(read_le<uint64_t>()))); break;
      // Python 2 str: torch reads them as text (latin-1/utf-8); names are ASCII either way.
      case SHORT_BINSTRING: push(string_of(Kind::String, read_bytes(read_u8()))); break;
      case BINSTRING: {
        const int32_t n = read_le<int32_t>();
        if (n < 0) error("BINSTRING with negative length {}", n);
        push(string_of(Kind::String, read_bytes(static_cast<uint64_t>(n))));
        break;
      }
      case SHORT_BINBYTES: push(string_of(Kind::Bytes, read_bytes(read_u8()))); break;
      case BINBYTES: push(string_of(Kind::Bytes, read_bytes(read_le<uint32_t>()))); break;
      case BINBYTES8: push(string_of(Kind::Bytes, read_bytes(read_le<uint64_t>()))); break;
      case EMPTY_TUPLE: push(make(Kind::Tuple)); break;
      case TUPLE1:
      case TUPLE2:
      case TUPLE3: {
        std::vector<Value*> items(op - TUPLE1 + 1);
        for (size_t k = items.size(); k-- > 0;) items[k] = pop();
        push(tuple_of(std::move(items)));
        break;
      }
      case TUPLE: push(tuple_of(pop_mark())); break;
      case EMPTY_LIST: push(make(Kind::List)); break;
      case LIST: {
        Value* l = make(Kind::List);
        l->items = pop_mark();
        push(l);
        break;
      }
      case APPEND: {
        Value* item = pop();
        append(top(), item);
        break;
      }
      case APPENDS: {
        std::vector<Value*> items = pop_mark();
        Value* list = top();
        for (Value* item : items) append(list, item);
        break;
      }
      case EMPTY_DICT: push(make(Kind::Dict)); break;
      case DICT:
      case SETITEMS: {
        std::vector<Value*> items = pop_mark();
        if (items.size() % 2) error("{} with an odd number ({}) of keys and values",
                                    op == DICT ? "DICT" : "SETITEMS", items.size());
        Value* dict = op == DICT ? make(Kind::Dict) : top();
        for (size_t k = 0; k < items.size(); k += 2) set_item(dict, items[k], items[k + 1]);
        if (op == DICT) push(dict);
        break;
      }
      case SETITEM: {
        Value* value = pop();
        Value* key = pop();
        set_item(top(), key, value);
        break;
      }
      case BINPUT: memo_put(read_u8()); break;
      case LONG_BINPUT: memo_put(read_le<uint32_t>()); break;
      case MEMOIZE: memo_put(memo_.size()); break;
      case BINGET: memo_get(read_u8()); break;
      case LONG_BINGET: memo_get(read_le<uint32_t>()); break;
      case GLOBAL: {
        const std::string module = read_line();
        const std::string name = read_line();
        push(global_of(module, name));
        break;
      }
      case STACK_GLOBAL: {
        Value* name = pop();
        Value* module = pop();
        if (module->kind != Kind::String || name->kind != Kind::String)
          error("STACK_GLOBAL of a {} and a {}, expected two strings", kind_name(module->kind),
                kind_name(name->kind));
        push(global_of(module->text, name->text));
        break;
      }
      case REDUCE:
      case NEWOBJ: {
        Value* args = pop();
        Value* callable = pop();
        push(apply(callable, args, op == REDUCE ? "REDUCE" : "NEWOBJ"));
        break;
      }
      case BUILD: {
        Value* state = pop();
        Value* obj = top();
        if (obj->kind != Kind::Dict && obj->kind != Kind::Reduce)
          error("BUILD on a {}, expected an object", kind_name(obj->kind));
        obj->state = state;
        break;
      }
      case BINPERSID: {
        Value* p = make(Kind::PersistentId);
        p->items = {pop()};
        doc_.persistent_ids.push_back(p);
        push(p);
        break;
      }
      default: {
        const char* name = refused_opcode_name(op);
        if (name) error("opcode {} (0x{:02x}) is not supported in a state dict", name, op);
        error("unknown opcode 0x{:02x}", op);
      }
    }
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_;
  size_t op_pos_ = 0;
  const std::string& what_;
  std::vector<Value*> stack_;
  std::vector<size_t> marks_;  // stack sizes at each MARK (Python's metastack)
  std::unordered_map<uint64_t, Value*> memo_;
  Document doc_;
};

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::BigInt: return "big int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::Reduce: return "object";
    case Kind::PersistentId: return "persistent id";
  }
  return "?";
}

std::string Value::reduce_callable() const {
  if (kind != Kind::Reduce || items.size() != 2 || items[0]->kind != Kind::Global) return "";
  return items[0]->text;
}

bool is_allowed_global(const std::string& qualified_name) {
  for (const char* g : kAllowedGlobals)
    if (qualified_name == g) return true;
  return false;
}

std::string allowed_globals_text() {
  std::string out;
  bool storages_listed = false;
  for (const char* g : kAllowedGlobals) {
    const std::string s = g;
    const bool storage = s.rfind("torch.", 0) == 0 && s.find('.', 6) == std::string::npos &&
                         s.size() > 7 && s.compare(s.size() - 7, 7, "Storage") == 0;
    if (storage && storages_listed) continue;  // the storage classes are summarised once
    if (!out.empty()) out += ", ";
    out += storage ? "torch.*Storage" : s;
    storages_listed = storages_listed || storage;
  }
  return out;
}

Document unpickle(const uint8_t* data, size_t size, size_t offset, const std::string& what) {
  if (offset > size) fail("{}: pickle byte {}: past the end ({} bytes)", what, offset, size);
  return Unpickler(data, size, offset, what).run();
}

}  // namespace bertrt::convert::pickle
