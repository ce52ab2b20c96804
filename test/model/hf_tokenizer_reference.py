"""
Hugging Face tokenizer directories written by `transformers` itself, and its own chat rendering of
them, for test/model/hf-directory.test.ts. Reads a JSON list of requests on stdin, writes the list
of answers on stdout.

  {"op": "save", "base": DIR, "out": DIR, "chatTemplate": str | {name: str} | null,
   "specialTokens": {"bos_token": ..., "eos_token": ..., "pad_token": ...},
   "addSpecialTokens": [str], "eosTokens": [str] | null, "legacy": bool}
      loads the tokenizer in `base`, adds tokens, sets the template and special tokens, and saves
      it to `out` with save_pretrained (legacy: the template inside tokenizer_config.json, as
      transformers 4.x wrote it; otherwise chat_template.jinja and additional_chat_templates/).
      eosTokens: written as generation_config.json's eos_token_id (a list of ids).
      Answers {"files": [...], "ids": {token: id}}.
  {"op": "apply", "dir": DIR, "conversations": [{"messages": [...], "tools": [...] | null}]}
      answers {"ids": [[...]], "texts": [...]}: apply_chat_template(messages, tools=tools,
      add_generation_prompt=True, tokenize=True), and the same rendered as text.
"""
import json
import os
import sys

from transformers import AutoTokenizer, GenerationConfig


def save(req):
    tok = AutoTokenizer.from_pretrained(req["base"], local_files_only=True)
    added = req.get("addSpecialTokens") or []
    if added:
        tok.add_special_tokens({"additional_special_tokens": added}, replace_extra_special_tokens=False)
    for key, value in (req.get("specialTokens") or {}).items():
        setattr(tok, key, value)
    template = req.get("chatTemplate")
    if template is not None:
        tok.chat_template = template
    out = req["out"]
    tok.save_pretrained(out, save_jinja_files=not req.get("legacy", False))
    eos = req.get("eosTokens")
    if eos:
        GenerationConfig(eos_token_id=[tok.convert_tokens_to_ids(t) for t in eos]).save_pretrained(out)
    names = set(added) | set(eos or []) | {v for v in (req.get("specialTokens") or {}).values() if v}
    files = sorted(os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs)
    return {"files": files, "ids": {n: tok.convert_tokens_to_ids(n) for n in names}}


def apply(req):
    tok = AutoTokenizer.from_pretrained(req["dir"], local_files_only=True)
    ids, texts = [], []
    for conv in req["conversations"]:
        tools = conv.get("tools") or None
        out = tok.apply_chat_template(conv["messages"], tools=tools, add_generation_prompt=True, tokenize=True)
        if hasattr(out, "keys") and "input_ids" in out:
            out = out["input_ids"]
        ids.append(list(out))
        texts.append(tok.apply_chat_template(conv["messages"], tools=tools, add_generation_prompt=True, tokenize=False))
    return {"ids": ids, "texts": texts}


def main():
    answers = [save(req) if req["op"] == "save" else apply(req) for req in json.load(sys.stdin)]
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
