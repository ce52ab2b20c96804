"""The project's small byte-level BPE tokenizer, written as an HF `tokenizer.json`.

Ids 0..255 are the 256 bytes (GPT-2 byte-to-unicode alphabet), then learned merges, then the
chat/tool special tokens (the same strings as the Qwen3 family, so the proxy's qwen3 tool-call
parsing and stop tokens work unchanged). Any text is encodable (byte fallback is built in).
With no corpus there are no merges: one token per byte, a vocabulary of about 265.
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from typing import Dict, Iterable, List, Tuple

# (content, special): special tokens are dropped by decode(skip_special_tokens); the others stay text.
SPECIAL_TOKENS: List[Tuple[str, bool]] = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<think>", False), ("</think>", False), ("<tool_call>", False), ("</tool_call>", False),
    ("<tool_response>", False), ("</tool_response>", False),
]

# GPT-2's pre-tokenization with ASCII classes standing in for \p{L} / \p{N} (training only).
_PRETOKEN = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


def bytes_to_unicode() -> Dict[int, str]:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def _words(texts: Iterable[str]) -> Counter:
    b2u = bytes_to_unicode()
    split = re.compile("|".join(re.escape(t) for t, _ in SPECIAL_TOKENS))
    counts: Counter = Counter()
    for text in texts:
        for part in split.split(text):
            for w in _PRETOKEN.findall(part):
                counts["".join(b2u[b] for b in w.encode("utf-8"))] += 1
    return counts


def train_merges(texts: Iterable[str], num_merges: int) -> List[Tuple[str, str]]:
    """Classic BPE training with incremental pair counts; ties break on the pair's text (deterministic)."""
    counts = _words(texts)
    words: List[List[str]] = [list(w) for w in counts]
    freq: List[int] = [counts[w] for w in counts]
    pairs: Counter = Counter()
    where: Dict[Tuple[str, str], set] = defaultdict(set)
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pairs[(a, b)] += freq[i]
            where[(a, b)].add(i)
    merges: List[Tuple[str, str]] = []
    while len(merges) < num_merges and pairs:
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        (a, b), c = best
        if c < 2:
            break
        merges.append((a, b))
        for i in list(where.pop((a, b), ())):
            w = words[i]
            for x, y in zip(w, w[1:]):
                pairs[(x, y)] -= freq[i]
                if pairs[(x, y)] <= 0:
                    del pairs[(x, y)]
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for x, y in zip(out, out[1:]):
                pairs[(x, y)] += freq[i]
                where[(x, y)].add(i)
        pairs.pop((a, b), None)
    return merges


def build_tokenizer_json(merges: List[Tuple[str, str]]) -> Tuple[dict, Dict[str, int]]:
    b2u = bytes_to_unicode()
    vocab: Dict[str, int] = {b2u[b]: b for b in range(256)}
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    added = []
    specials: Dict[str, int] = {}
    for content, special in SPECIAL_TOKENS:
        tid = len(vocab) + len(added)
        specials[content] = tid
        added.append({"id": tid, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": special})
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }
    return tok, specials


# A compact ChatML template with tools (the project's own). Assistant turns are written the way the
# qwen3 output format (src/runtime/model/output-format.ts) writes a completion:
#   <think>\n{reasoning}\n</think>\n\n{text}\n<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>
# and consecutive tool results share one user turn, each in <tool_response>\n...\n</tool_response>.
# HF chat templates run with trim_blocks (a newline right after a {% %} tag is dropped), so every
# newline that follows a tag is written as {{ NL }}.
CHAT_TEMPLATE = (
    "{% set NL = '\\n' %}"
    "{% if messages[0].role == 'system' or tools %}<|im_start|>system{{ NL }}"
    "{% if messages[0].role == 'system' %}{{ messages[0].content }}{% if tools %}{{ NL }}{% endif %}{% endif %}"
    "{% if tools %}# Tools{{ NL }}{% for tool in tools %}"
    "{{ (tool.function if tool.function is defined else tool) | tojson }}{{ NL }}{% endfor %}"
    "Call a tool with <tool_call>{\"name\": NAME, \"arguments\": ARGS}</tool_call>{% endif %}<|im_end|>{{ NL }}{% endif %}"
    "{% for m in messages %}"
    "{% if m.role == 'system' and loop.first %}"
    "{% elif m.role == 'assistant' %}<|im_start|>assistant{{ NL }}"
    "{% if m.reasoning_content %}<think>{{ NL }}{{ m.reasoning_content }}{{ NL }}</think>{{ NL }}{{ NL }}{% endif %}"
    "{% if m.content %}{{ m.content }}{% endif %}"
    "{% if m.tool_calls %}{% for tc in m.tool_calls %}{% set f = tc.function if tc.function is defined else tc %}"
    "{% if not loop.first or m.content %}{{ NL }}{% endif %}"
    "<tool_call>{{ NL }}{\"name\": {{ f.name | tojson }}, \"arguments\": "
    "{% if f.arguments is string %}{{ f.arguments }}{% else %}{{ f.arguments | tojson }}{% endif %}}{{ NL }}</tool_call>"
    "{% endfor %}{% endif %}<|im_end|>{{ NL }}"
    "{% elif m.role == 'tool' %}"
    "{% if loop.first or messages[loop.index0 - 1].role != 'tool' %}<|im_start|>user{% endif %}"
    "{{ NL }}<tool_response>{{ NL }}{{ m.content }}{{ NL }}</tool_response>"
    "{% if loop.last or messages[loop.index0 + 1].role != 'tool' %}<|im_end|>{{ NL }}{% endif %}"
    "{% else %}<|im_start|>{{ m.role }}{{ NL }}{{ m.content }}<|im_end|>{{ NL }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant{{ NL }}{% endif %}"
)


def build_tokenizer_config(max_len: int) -> dict:
    return {
        "tokenizer_class": "GPT2Tokenizer", "add_bos_token": False, "add_prefix_space": False,
        "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
        "clean_up_tokenization_spaces": False, "model_max_length": max_len, "chat_template": CHAT_TEMPLATE,
    }


def write_tokenizer(out_dir: str, merges: List[Tuple[str, str]], max_len: int) -> Tuple[int, Dict[str, int]]:
    """Write tokenizer.json, tokenizer_config.json and chat_template.jinja; return (vocab size, specials)."""
    tok, specials = build_tokenizer_json(merges)
    with open(f"{out_dir}/tokenizer.json", "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(f"{out_dir}/tokenizer_config.json", "w", encoding="utf-8") as f:
        json.dump(build_tokenizer_config(max_len), f, ensure_ascii=False, indent=1)
    with open(f"{out_dir}/chat_template.jinja", "w", encoding="utf-8") as f:
        f.write(CHAT_TEMPLATE)
    return len(tok["model"]["vocab"]) + len(tok["added_tokens"]), specials
