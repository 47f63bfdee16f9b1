"""The HTTP checks of tests/e2e/serve_test.sh: a running `bertrt serve` answered with Python
requests (and raw sockets for the faults) must equal `bertrt embed` / `rerank` / `predict`.

Usage: serve_client.py MODE BASE_URL EXPECTED_DIR
  MODE main   routes, bodies, concurrency, faults (one server: emb, ce, sst2, prompts)
  MODE flood  a flood past --max-concurrent-requests 1 (a server of emb only)
  MODE auth   --api-key-file (a server of emb only; the key is "sk-test")
Exit 0 when every check passes; each failure prints a line starting FAIL.
"""
import base64
import json
import socket
import sys
import threading
import time
import urllib.parse

import numpy as np
import requests

MODE, BASE, EXP = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3]
HOST = urllib.parse.urlparse(BASE).hostname
PORT = urllib.parse.urlparse(BASE).port
# Dynamic batching packs one request's texts beside other requests' (other GEMM shapes, other
# summation orders): the packed and padded outputs of one text agree to 1e-5
# (tests/unit/packed_batch_test.cpp, embed_test.sh), and a softmax or sigmoid only shrinks that.
TOL = 1e-5
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what, flush=True)


def close(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and (a.size == 0 or np.abs(a - b).max() <= TOL)


def lines(name):
    with open(f"{EXP}/{name}") as f:
        return [json.loads(line) for line in f if line.strip()]


def texts(name):
    with open(f"{EXP}/{name}") as f:
        return f.read().split("\n")[:-1]


def post(route, body, **kw):
    return requests.post(BASE + route, json=body, timeout=60, **kw)


def raw(payload, read=True, timeout=10):
    """Sends bytes on a fresh connection; returns the status code of the answer (0: none)."""
    s = socket.create_connection((HOST, PORT), timeout=timeout)
    try:
        s.sendall(payload)
        if not read:
            return 0
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                return 0
            data += chunk
        return int(data.split(b" ")[1])
    finally:
        s.close()


def error_shape(r, status, contains=""):
    ok = r.status_code == status
    try:
        j = r.json()
        ok = ok and isinstance(j.get("error"), str) and isinstance(j.get("error_type"), str)
        ok = ok and contains in j["error"]
    except ValueError:
        ok = False
    check(ok, f"expected {status} with a JSON error naming '{contains}', got {r.status_code} {r.text[:300]}")


def main_checks():
    emb_texts = texts("texts.txt")
    emb = [l["embedding"] for l in lines("embed.jsonl")]
    emb4 = [l["embedding"] for l in lines("embed_dim4.jsonl")]
    emb4_raw = [l["embedding"] for l in lines("embed_dim4_raw.jsonl")]
    query_emb = [l["embedding"] for l in lines("embed_query.jsonl")]
    passages = texts("passages.txt")
    rr = {l["index"]: l["score"] for l in lines("rerank.jsonl")}
    rr_raw = {l["index"]: l["score"] for l in lines("rerank_raw.jsonl")}
    sents = texts("sentences.txt")
    pred = lines("predict.jsonl")

    # --- routes against the CLI -----------------------------------------------------------------
    r = post("/embed", {"inputs": emb_texts})
    check(r.status_code == 200 and close(r.json(), emb), f"/embed differs from bertrt embed: {r.text[:200]}")
    r = post("/embed", {"inputs": emb_texts[0]})
    check(r.status_code == 200 and close(r.json(), emb[:1]), "/embed of one string: [[...]]")
    r = post("/embed", {"inputs": emb_texts, "dimensions": 4})
    check(r.status_code == 200 and close(r.json(), emb4), "/embed dimensions 4 differs from --dimensions 4")
    r = post("/embed", {"inputs": emb_texts, "prompt_name": "query", "model": "prompts"})
    check(r.status_code == 200 and close(r.json(), query_emb), "/embed prompt_name differs from --prompt-name")
    r = post("/embed", {"inputs": emb_texts, "normalize": False, "dimensions": 4})
    check(r.status_code == 200 and close(r.json(), emb4_raw), "/embed normalize false differs from --no-normalize")
    # OpenAI: the shape the openai client sends (encoding_format base64 by default) and float.
    r = post("/v1/embeddings", {"input": emb_texts, "model": "emb", "encoding_format": "base64"})
    ok = r.status_code == 200
    if ok:
        j = r.json()
        got = [np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4") for d in j["data"]]
        ok = (j["object"] == "list" and j["model"] == "emb" and [d["index"] for d in j["data"]] == list(range(len(emb_texts)))
              and all(d["object"] == "embedding" for d in j["data"]) and close(got, emb)
              and j["usage"]["prompt_tokens"] == j["usage"]["total_tokens"] > 0)
    check(ok, f"/v1/embeddings base64: {r.text[:300]}")
    r = post("/v1/embeddings", {"input": emb_texts[1], "model": "emb"})
    check(r.status_code == 200 and close([r.json()["data"][0]["embedding"]], emb[1:2]), "/v1/embeddings float")
    r = post("/v1/embeddings", {"input": "x", "model": "text-embedding-3-small"})
    check(r.status_code == 422 and "not served" in r.json().get("message", "") and r.json().get("code") == 422,
          f"/v1/embeddings unknown model: OpenAI-shaped 422: {r.text[:200]}")

    r = post("/rerank", {"query": "the cat", "texts": passages, "return_text": True})
    ok = r.status_code == 200
    if ok:
        j = r.json()
        scores = [x["score"] for x in j]
        ok = (sorted(x["index"] for x in j) == list(range(len(passages))) and scores == sorted(scores, reverse=True)
              and all(x["text"] == passages[x["index"]] for x in j)
              and close([x["score"] for x in sorted(j, key=lambda x: x["index"])], [rr[i] for i in range(len(passages))]))
    check(ok, f"/rerank differs from bertrt rerank: {r.text[:300]}")
    r = post("/rerank", {"query": "the cat", "texts": passages, "raw_scores": True})
    check(r.status_code == 200 and "text" not in r.json()[0] and
          close([x["score"] for x in sorted(r.json(), key=lambda x: x["index"])], [rr_raw[i] for i in range(len(passages))]),
          "/rerank raw_scores differs from --raw-scores")

    r = post("/predict", {"inputs": [[s] for s in sents]})
    ok = r.status_code == 200 and len(r.json()) == len(sents)
    if ok:
        for got, want in zip(r.json(), pred):
            labels = sorted(want["probabilities"])
            scores = {p["label"]: p["score"] for p in got}
            ok = ok and sorted(scores) == labels and close([scores[k] for k in labels],
                                                           [want["probabilities"][k] for k in labels])
            ok = ok and got[0]["label"] == want["label"] and got[0]["score"] >= got[-1]["score"]
    check(ok, f"/predict differs from bertrt predict: {r.text[:300]}")
    pred_lora = lines("predict_lora.jsonl")
    r = post("/predict", {"inputs": [[x] for x in sents], "model": "lora"})
    ok = r.status_code == 200
    if ok:
        for got, want in zip(r.json(), pred_lora):
            scores = {p["label"]: p["score"] for p in got}
            ok = ok and close([scores[k] for k in sorted(want["probabilities"])],
                              [want["probabilities"][k] for k in sorted(want["probabilities"])])
    check(ok, f"/predict of a model with --adapter differs from bertrt predict --adapter: {r.text[:300]}")
    r = post("/predict", {"inputs": sents[0]})
    check(r.status_code == 200 and isinstance(r.json()[0], dict) and r.json()[0]["label"] == pred[0]["label"],
          "/predict of one text: [{score, label}, ...]")
    r = post("/predict", {"inputs": sents[0], "raw_scores": True})
    check(r.status_code == 200 and abs(sum(p["score"] for p in r.json()) - 1) > 1e-3, "/predict raw_scores are logits")

    r = post("/tokenize", {"inputs": ["Hello, world!"]})
    ok = r.status_code == 200
    if ok:
        toks = r.json()[0]
        ok = (toks[0]["special"] and toks[0]["text"] == "[CLS]" and toks[-1]["text"] == "[SEP]"
              and [t["text"] for t in toks[1:-1]] == ["Hello", ",", "world", "!"]
              and all("Hello, world!"[t["start"]:t["stop"]] == t["text"] for t in toks[1:-1]))
    check(ok, f"/tokenize: {r.text[:300]}")
    r = post("/tokenize", {"inputs": "a", "add_special_tokens": False})
    check(r.status_code == 200 and len(r.json()[0]) == 1, "/tokenize add_special_tokens false")

    r = requests.get(BASE + "/info", timeout=10)
    j = r.json() if r.ok else {}
    check(r.status_code == 200 and j.get("model_id") == "emb" and "embedding" in j.get("model_type", {})
          and j.get("max_batch_tokens") == 2048 and j.get("max_client_batch_size") == 32
          and [m["name"] for m in j.get("models", [])] == ["emb", "ce", "sst2", "prompts", "lora"], f"/info: {r.text[:300]}")
    check(requests.get(BASE + "/health", timeout=10).status_code == 200, "/health")

    # --- many clients at once: each answer equals its own inputs' ---------------------------------
    results = {}

    def client(k):
        sess = requests.Session()
        out = []
        for i in range(6):
            sub = [emb_texts[(k + i + j) % len(emb_texts)] for j in range(1 + (k + i) % 3)]
            idx = [(k + i + j) % len(emb_texts) for j in range(1 + (k + i) % 3)]
            rr_ = sess.post(BASE + "/embed", json={"inputs": sub}, timeout=60)
            out.append(rr_.status_code == 200 and close(rr_.json(), [emb[x] for x in idx]))
            rq = sess.post(BASE + "/rerank", json={"query": "the cat", "texts": passages[k % 2:]}, timeout=60)
            want = [rr[x] for x in range(k % 2, len(passages))]
            out.append(rq.status_code == 200 and close([x["score"] for x in sorted(rq.json(), key=lambda x: x["index"])], want))
        results[k] = out

    threads = [threading.Thread(target=client, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(all(all(v) for v in results.values()) and len(results) == 16,
          f"16 concurrent clients: wrong answers {[k for k, v in results.items() if not all(v)]}")

    # --- faults -------------------------------------------------------------------------------------
    error_shape(requests.post(BASE + "/embed", data=b'{"inputs": ', timeout=10), 400, "not valid JSON")
    error_shape(post("/embed", {"inputs": 5}), 422, "`inputs`")
    error_shape(post("/embed", {"inputs": ["a", None]}), 422, "`inputs[1]`")
    error_shape(post("/rerank", {"query": 1, "texts": ["a"]}), 422, "`query`")
    error_shape(post("/embed", {"inputs": []}), 400, "cannot be empty")
    error_shape(post("/rerank", {"query": "q", "texts": []}), 400, "cannot be empty")
    error_shape(post("/embed", {"inputs": ["a"] * 33}), 422, "--max-client-batch-size")
    error_shape(post("/embed", {"inputs": "a", "dimensions": 13}), 422, "`dimensions`")
    error_shape(post("/embed", {"inputs": "a", "prompt_name": "nope", "model": "prompts"}), 422, "`prompt_name`")
    long_text = " ".join(["word"] * 100)  # past the test model's 24 tokens
    error_shape(post("/embed", {"inputs": long_text}), 422, "--auto-truncate")
    r = post("/embed", {"inputs": long_text, "truncate": True})
    check(r.status_code == 200 and len(r.json()[0]) == len(emb[0]), "/embed truncate true")
    error_shape(post("/rerank", {"query": "q", "texts": ["a"], "model": "emb"}), 424, "not a reranker")
    error_shape(requests.post(BASE + "/embed", data=b"x" * (10 * 1024 * 1024), timeout=60), 413, "--payload-limit")
    error_shape(requests.get(BASE + "/nowhere", timeout=10), 404, "no route")
    check(raw(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"inputs\"\xff") == 400,
          "bytes that are not UTF-8 in the JSON: 400")
    error_shape(requests.post(BASE + "/embed", data='{"inputs": "\\udc80"}', timeout=10), 400, "")
    # A client that sends a byte a second is closed after --request-timeout (3 s here), while
    # another client is answered meanwhile.
    slow = socket.create_connection((HOST, PORT), timeout=20)
    head = b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n"
    start, closed = time.time(), False
    for i in range(15):
        try:
            slow.send(head[i:i + 1])
            slow.settimeout(1.0)
            if slow.recv(1) == b"":
                closed = True
                break
        except socket.timeout:
            pass
        except OSError:
            closed = True
            break
        if i == 1:
            r = post("/embed", {"inputs": emb_texts[:2]})
            check(r.status_code == 200 and close(r.json(), emb[:2]), "an answer while a slow client trickles")
    slow.close()
    check(closed and time.time() - start < 12, f"the slow client was not closed ({time.time() - start:.1f} s)")
    # Clients gone mid-request: mid-body, and after the whole request before the answer.
    raw(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"inputs\": [\"a", read=False)
    body = json.dumps({"inputs": emb_texts}).encode()
    for _ in range(5):
        raw(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body), read=False)
    time.sleep(0.5)
    r = post("/embed", {"inputs": emb_texts})
    check(r.status_code == 200 and close(r.json(), emb), "answers stay right after clients disconnected")

    m = requests.get(BASE + "/metrics", timeout=10).text
    check('bertrt_requests_total{route="/embed",code="200"}' in m and 'bertrt_requests_total{route="/embed",code="413"} 1' in m
          and "bertrt_batch_tokens_bucket" in m and "bertrt_queue_size 0" in m
          and 'bertrt_request_duration_seconds_count{route="/rerank"}' in m, "/metrics: " + m[:400])


def flood_checks():
    emb_texts = texts("texts.txt")
    emb = [l["embedding"] for l in lines("embed.jsonl")]
    statuses, wrong, retry = [], [], []
    lock = threading.Lock()

    # 48 clients, 8 requests each, against a queue of one: many more arrive while one runs than
    # the queue holds.
    def client(k):
        sess = requests.Session()
        for i in range(8):
            sub = [emb_texts[(k + i + j) % len(emb_texts)] for j in range(32)]
            want = [emb[(k + i + j) % len(emb_texts)] for j in range(32)]
            r = sess.post(BASE + "/embed", json={"inputs": sub}, timeout=60)
            with lock:
                statuses.append(r.status_code)
                if r.status_code == 200 and not close(r.json(), want):
                    wrong.append(k)
                if r.status_code == 429:
                    retry.append(r.headers.get("Retry-After") == "1" and r.json().get("error_type") == "Overloaded")

    threads = [threading.Thread(target=client, args=(k,)) for k in range(48)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(set(statuses) <= {200, 429} and len(statuses) == 48 * 8, f"flood: statuses {sorted(set(statuses))}")
    print(f"flood: {statuses.count(200)} answered, {statuses.count(429)} refused with 429")
    check(statuses.count(429) >= 1 and statuses.count(200) >= 1, f"flood: {statuses.count(429)} answers 429, {statuses.count(200)} 200")
    check(all(retry), "flood: each 429 says Retry-After: 1 and error_type Overloaded")
    check(not wrong, f"flood: wrong embeddings for clients {wrong}")
    r = requests.post(BASE + "/embed", json={"inputs": emb_texts}, timeout=60)
    check(r.status_code == 200 and close(r.json(), emb), "after the flood: answered right")


def auth_checks():
    emb = [l["embedding"] for l in lines("embed.jsonl")]
    body = {"inputs": texts("texts.txt")}
    error_shape(requests.post(BASE + "/embed", json=body, timeout=10), 401, "API key")
    error_shape(requests.post(BASE + "/embed", json=body, headers={"Authorization": "Bearer sk-tes"}, timeout=10), 401, "API key")
    r = requests.post(BASE + "/embed", json=body, headers={"Authorization": "Bearer sk-test"}, timeout=10)
    check(r.status_code == 200 and close(r.json(), emb), "the right key is answered")
    check(requests.get(BASE + "/health", timeout=10).status_code == 200, "/health needs no key")


{"main": main_checks, "flood": flood_checks, "auth": auth_checks}[MODE]()
print(f"serve_client {MODE}: {checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
