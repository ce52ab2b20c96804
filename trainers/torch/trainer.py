"""The trainer: model, frozen reference, optimizer, and the protocol's operations.

Every operation returns a plain dict (the HTTP body) or raises `BatchProblem` with plain words.
The same code runs on one CPU process and, under torchrun with CUDA, on several ranks with FSDP
(see distributed.py): each rank trains its share of the micro-batches, denominators are global.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from typing import Any, Dict, List, Optional

import torch

from . import checkpoint_io, hf_checkpoint
from .batch import BatchProblem, assign_coefficients, finite_or_problem, parse_batch, read_batch
from .distributed import Dist
from .losses import policy_loss, sft_loss, token_terms
from .model import Policy
from .onnx_export import export_onnx
from .packing import build_micro_batch, group_micro_batches, prefix_runs

PROTOCOL_VERSION = 1
MODEL_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json",
               "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "tokenizer.model")
# Written by save_weights next to weights that have been trained (>= 1 optimizer step, counting the
# steps of the weights the worker started from): {"optimizerSteps": n, "version": v}.
TRAINED_MARKER = "trained.json"


def trained_steps(model_dir: str) -> int:
    """Optimizer steps behind the weights in `model_dir` (its trained.json), 0 when untrained."""
    try:
        with open(os.path.join(model_dir, TRAINED_MARKER), "r", encoding="utf-8") as f:
            return max(0, int(json.load(f).get("optimizerSteps", 0)))
    except (OSError, ValueError, AttributeError, TypeError):
        return 0


def load_policy(model_dir: str, value_head: bool = False) -> Policy:
    """The policy of a model directory: the project's own, or a Hugging Face Qwen3 checkpoint
    (hf_checkpoint.py), in float32 either way."""
    cfg, layout = hf_checkpoint.read_layout(model_dir)
    cfg.value_head = cfg.value_head or value_head
    policy = Policy(cfg)
    sd = hf_checkpoint.read_weights(model_dir, layout)
    try:
        policy.load_policy_state_dict(sd)
    except (ValueError, RuntimeError) as e:
        raise BatchProblem("BadCheckpoint", f"the weights in {model_dir} do not fit its config.json: {e}",
                           "the weight files and config.json must come from the same checkpoint")
    if policy.value_head is not None:
        torch.nn.init.zeros_(policy.value_head.weight)
        torch.nn.init.zeros_(policy.value_head.bias)
    return policy


class Trainer:
    def __init__(self, model_dir: str, out_dir: str, lr: float = 1e-4, device: str = "cpu",
                 micro_batch_tokens: int = 8192, micro_batch_cells: int = 0, grad_clip: float = 1.0, value_head: bool = False,
                 vf_coef: float = 0.5, seed: int = 0, dist: Optional[Dist] = None, policy: Optional[Policy] = None,
                 share_prefix: bool = True):
        torch.manual_seed(seed)
        self.model_dir, self.out_dir = os.path.abspath(model_dir), os.path.abspath(out_dir)
        os.makedirs(self.out_dir, exist_ok=True)
        self.device = torch.device(device)
        self.dist = dist or Dist.single()
        self.policy = (policy if policy is not None else load_policy(model_dir, value_head)).to(self.device)
        # How the starting directory stores its weights: save_weights writes the same layout.
        self.layout = hf_checkpoint.read_layout(model_dir)[1] if policy is None else hf_checkpoint.Layout(kind="reins")
        self.config = self.policy.config
        self.model = self.dist.wrap(self.policy)
        self.lr, self.grad_clip, self.vf_coef = lr, grad_clip, vf_coef
        self.micro_batch_tokens = micro_batch_tokens
        # Compute a prefix all rows of a micro-batch share once (packing.py); exact up to float rounding.
        self.share_prefix = share_prefix
        # Attention cells (rows × length²) per micro-batch: small on CPU, where big score
        # matrices cost more in memory traffic than they save in per-call overhead.
        self.micro_batch_cells = micro_batch_cells or (1 << 22 if self.device.type == "cpu" else 1 << 28)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8,
                                           weight_decay=0.0)
        self.step = 0
        self.pending_tokens = 0
        self.reference: Optional[Policy] = None
        self.reference_source: Optional[str] = None
        self.weights_version: Optional[str] = None
        # Optimizer steps the starting weights already had (their trained.json; 0 for a fresh policy).
        self.base_steps = trained_steps(model_dir)
        self.initial_version = "in-memory"
        if all(os.path.exists(os.path.join(model_dir, f)) for f in self.layout.files):
            self.initial_version = hf_checkpoint.content_version(model_dir, self.layout)

    # ---- helpers -------------------------------------------------------------------------
    def _ref(self, checkpoint: Optional[str] = None) -> Policy:
        """The frozen KL reference: the weights of `checkpoint` (a /checkpoint directory: the policy
        RL started from, after SFT), else the worker's starting weights."""
        if self.reference is None or self.reference_source != checkpoint:
            if checkpoint:
                sd = checkpoint_io.read_model(checkpoint)  # safetensors only: no pickle
                ref = Policy(self.config)
                ref.load_state_dict({k.replace("_fsdp_wrapped_module.", ""): v for k, v in sd.items()}, strict=False)
            else:
                ref = load_policy(self.model_dir)
            self.reference = ref.to(self.device).eval()
            self.reference_source = checkpoint
            for p in self.reference.parameters():
                p.requires_grad_(False)
        return self.reference

    @staticmethod
    def _select(model, mb, with_values: bool = False, past=None):
        """Logits (and values) at the positions predicting each trained token."""
        return model(mb.input_ids, mb.position_ids, mb.mask, mb.b_idx, mb.pred_idx, with_values, mb.prefix, past)

    def _prefix_kv(self, prefix):
        """A run's shared prefix through the model once: its keys and values per layer (graph kept),
        and detached leaf copies the run's micro-batches attend to and accumulate gradients in."""
        _, outs = self.policy.hidden(prefix[0], prefix[1])
        flat = [t for kv in outs for t in kv]
        leaves = [t.detach().requires_grad_() for t in flat]
        return {"outs": flat, "leaves": leaves, "past": [(leaves[2 * i], leaves[2 * i + 1]) for i in range(len(outs))]}

    @staticmethod
    def _finish_prefix(kv) -> None:
        """Back-propagate what the run's micro-batches accumulated in the prefix's keys and values."""
        pairs = [(o, l.grad) for o, l in zip(kv["outs"], kv["leaves"]) if l.grad is not None]
        if pairs:
            torch.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])

    def _zero_grads(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        self.pending_tokens = 0

    # ---- protocol operations -------------------------------------------------------------
    def health(self) -> Dict[str, Any]:
        params = sum(p.numel() for p in self.policy.parameters())
        return {"status": "ok", "protocolVersion": PROTOCOL_VERSION, "step": self.step, "device": str(self.device),
                "worldSize": self.dist.world, "parameters": params, "vocabSize": self.config.vocab_size,
                "modelDir": self.model_dir, "outDir": self.out_dir, "pendingTokens": self.pending_tokens,
                "weightsVersion": self.weights_version or self.initial_version,
                "valueHead": self.policy.value_head is not None}

    def forward_backward(self, req: Dict[str, Any]) -> Dict[str, Any]:
        t0 = time.perf_counter()
        raw = read_batch(req)
        batch = parse_batch(raw, self.config.vocab_size)
        objective = req.get("objective", "rl")
        if objective not in ("rl", "sft"):
            raise BatchProblem("BadRequest", f"unknown objective {objective!r}", "use \"rl\" or \"sft\"")
        alg = dict(batch.algorithm)
        if req.get("algorithm"):
            alg.update(req["algorithm"])
        trained = assign_coefficients(batch, alg.get("lossAggregation", "token-mean"))
        share = bool(req.get("sharePrefix", self.share_prefix))
        groups = group_micro_batches(batch.rows, int(req.get("microBatchTokens", self.micro_batch_tokens)),
                                     int(req.get("microBatchCells", self.micro_batch_cells)), share)
        mine = groups[self.dist.rank::self.dist.world]
        rounds = self.dist.max_int(len(mine))
        # One process: a prefix shared by consecutive micro-batches goes through the model once for
        # all of them (ranks of a distributed run keep to one forward and backward per micro-batch).
        runs = prefix_runs(mine) if share and not self.dist.sharded else [(-1, 0)] * len(mine)
        run_kv = None
        kl_coef = float(alg.get("klCoef", 0.0) or 0.0)
        use_values = objective == "rl" and alg.get("type") == "PPO"
        if use_values:
            self._check_ppo_batch(batch)
        vf_coef = float(alg.get("valueCoef", self.vf_coef))
        sums: Dict[str, float] = {}
        processed = padded = 0
        record = req.get("recordLogprobs") if objective == "rl" else None
        recorded: List[tuple] = []
        self.model.train()
        for i in range(rounds):
            if i >= len(mine):
                self.dist.dummy_backward(self.model, self.device)
                continue
            run, run_p = runs[i]
            mb = build_micro_batch(mine[i], self.device, share, run_p if run >= 0 else None)
            past = None
            if run >= 0:
                if run_kv is None or run_kv["run"] != run:
                    run_kv = {"run": run, **self._prefix_kv(mb.prefix)}
                else:  # counted once, with the run's first micro-batch
                    mb.tokens -= run_p
                    mb.padded -= run_p
                past = run_kv["past"]
            logits, values = self._select(self.model, mb, use_values, past)
            lp, ent = token_terms(logits, mb.target)
            if record:
                recorded.extend(split_by_row(mine[i], lp))
            if objective == "sft":
                out = sft_loss(lp, mb)
            else:
                ref_lp = None
                if kl_coef > 0:
                    with torch.no_grad():
                        ref_logits, _ = self._select(self._ref(req.get("referenceCheckpoint")), mb)
                        ref_lp, _ = token_terms(ref_logits, mb.target)
                out = policy_loss(lp, ent, mb, alg, batch.num_seqs, ref_lp)
                if use_values:
                    # The value head regresses on the batch's returns (GAE advantage + the value
                    # it was computed from, fixed for the step), aggregated like the policy loss.
                    vloss = (mb.coef * 0.5 * (values - mb.returns) ** 2).sum()
                    out["loss"] = out["loss"] + vf_coef * vloss
                    out["stats"]["value_loss"] = vloss.detach()
            loss = out["loss"]
            value = float(loss.detach())
            if not torch.isfinite(loss.detach()):
                self._zero_grads()
                first = mine[i][0].rollout
                finite_or_problem(value, f"the loss of micro-batch {i + 1} (rollouts from {first})",
                                  "no gradient was kept: this call's and earlier accumulated gradients were "
                                  "discarded, so the next optim_step has nothing to apply; check the batch's "
                                  "advantages and logprobs, and lower the learning rate if the weights diverged")
            (loss * self.dist.world).backward()
            if run >= 0 and (i + 1 >= len(mine) or runs[i + 1][0] != run):
                self._finish_prefix(run_kv)
                run_kv = None
            sums["loss"] = sums.get("loss", 0.0) + value
            for k, v in out["stats"].items():
                x = float(v)
                if k in ("w_max",):
                    sums[k] = max(sums.get(k, x), x)
                elif k in ("w_min",):
                    sums[k] = min(sums.get(k, x), x)
                else:
                    sums[k] = sums.get(k, 0.0) + x
            processed += mb.tokens
            padded += mb.padded
        sums = self.dist.reduce_stats(sums)
        processed, padded = self.dist.sum_int(processed), self.dist.sum_int(padded)
        if record:
            write_logprobs(record if self.dist.world == 1 else f"{record}.rank{self.dist.rank}", recorded, self.step)
        if not all(torch.isfinite(torch.tensor(v)) for v in sums.values()):
            self._zero_grads()
            raise BatchProblem("NonFiniteLoss", "a metric of this batch is NaN or infinite; the step was refused",
                               "no gradient was kept; check the batch's advantages and logprobs")
        self.pending_tokens += trained
        secs = time.perf_counter() - t0
        n = float(trained)
        m: Dict[str, Any] = {"objective": objective, "loss": sums["loss"], "tokens": trained,
                             "tokensProcessed": processed, "tokensPadded": padded, "rows": len(batch.rows),
                             "rollouts": batch.num_rollouts, "sequences": batch.num_seqs, "microBatches": len(groups), "seconds": secs,
                             "tokensPerSecond": processed / secs if secs > 0 else None,
                             "trainedTokensPerSecond": n / secs if secs > 0 else None,
                             "layout": batch.layout, "step": self.step}
        if objective == "sft":
            m["nll"] = sums["nll"] / n
            return m
        corr = alg.get("correction") or {"type": "none"}
        m.update({
            "pgLoss": sums["pg"], "entropy": sums["entropy"] / n, "clipFraction": sums["clipped"] / n,
            "kl": sums["kl"] / n if kl_coef > 0 else None, "klRollout": sums["kl_rollout"] / n,
            "logprobAbsDiff": sums["abs_lp_diff"] / n,
            "correction": {"type": corr.get("type", "none"), "level": corr.get("level"),
                           "weightMean": sums["w_sum"] / n, "weightMax": sums["w_max"], "weightMin": sums["w_min"],
                           "fractionCapped": sums["limited"] / n if corr.get("type") == "TIS" else 0.0,
                           "fractionMasked": sums["limited"] / n if corr.get("type") == "MIS" else 0.0},
        })
        if "value_loss" in sums:
            m["valueLoss"] = sums["value_loss"]
        return m

    def _check_ppo_batch(self, batch) -> None:
        """A PPO batch trains the value head on its returns: both must be there."""
        if self.policy.value_head is None:
            raise BatchProblem("NoValueHead", "this is a PPO batch, but the worker has no value head to train",
                               "start the worker with --value-head for PPO")
        missing = [r.rollout for r in batch.rows if r.returns is None]
        if missing:
            raise BatchProblem("MissingReturns", f"PPO rows without `returns` (rollout {missing[0]}): the batch was "
                               "built without critic values", "ask /compute_values on the batch's trees and build "
                               "the advantages and returns from them (applyCritic) before forward_backward")

    def optim_step(self, req: Dict[str, Any]) -> Dict[str, Any]:
        if self.pending_tokens == 0:
            raise BatchProblem("NoGradients", "optim_step was called with no accumulated gradients",
                               "call forward_backward with a batch first (a refused batch leaves no gradients)")
        lr = float(req.get("learningRate", self.lr))
        betas = req.get("betas")
        if betas is not None:
            if (not isinstance(betas, list) or len(betas) != 2
                    or not all(isinstance(b, (int, float)) and 0 <= b < 1 for b in betas)):
                raise BatchProblem("BadRequest", f"betas is {betas!r}", "give two numbers in [0, 1), e.g. [0.9, 0.95]")
        if req.get("resetState"):
            # A fresh start of Adam's moments (the first RL step after SFT): the second moment SFT
            # accumulated would otherwise scale every RL step by the ratio of the two phases' gradients.
            self.optimizer.state.clear()
        for g in self.optimizer.param_groups:
            g["lr"] = lr
            if betas is not None:
                g["betas"] = (float(betas[0]), float(betas[1]))
        clip = float(req.get("gradClip", self.grad_clip))
        norm = float(self.dist.clip_grad_norm(self.model, clip if clip > 0 else float("inf")))
        if not torch.isfinite(torch.tensor(norm)):
            self._zero_grads()
            raise BatchProblem("NonFiniteGradient", f"the gradient norm is {norm}; the step was refused and the "
                               "gradients were discarded", "check the batch; lower the learning rate")
        self.optimizer.step()
        tokens = self.pending_tokens
        self._zero_grads()
        self.step += 1
        return {"gradNorm": norm, "lr": lr, "step": self.step, "tokens": tokens}

    def save_weights(self, req: Dict[str, Any]) -> Dict[str, Any]:
        # A Hugging Face checkpoint is written back as one (safetensors only, unless asked).
        hf = self.layout.kind == "hf"
        formats = req.get("formats") or (["safetensors"] if hf else ["onnx", "safetensors"])
        unknown = [f for f in formats if f not in ("onnx", "safetensors")]
        if unknown:
            raise BatchProblem("BadRequest", f"unknown weights format {unknown[0]!r}", "use \"onnx\" and/or \"safetensors\"")
        max_shard = req.get("maxShardBytes")
        if max_shard is not None and (not isinstance(max_shard, int) or isinstance(max_shard, bool) or max_shard <= 0):
            raise BatchProblem("BadRequest", f"maxShardBytes is {max_shard!r}", "give a positive number of bytes, or leave "
                               "it out to keep the source checkpoint's shards")
        sd = self.dist.full_state_dict(self.model, self.policy)
        if not self.dist.is_main:
            return {}
        version, files = hf_checkpoint.encode_weights(sd, self.layout, {"format": "pt", "step": str(self.step)}, max_shard)
        root = os.path.join(self.out_dir, "weights")
        final = os.path.join(root, version)
        out: Dict[str, Any] = {"version": version, "step": self.step, "dir": final}
        if not os.path.exists(os.path.join(final, "READY")):
            tmp = os.path.join(root, f".{version}.tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            if "safetensors" in formats:
                for name, data in files.items():
                    with open(os.path.join(tmp, name), "wb") as f:
                        f.write(data)
            steps = self.base_steps + self.step
            if steps > 0:  # the marker of trained weights (see trained_steps)
                with open(os.path.join(tmp, TRAINED_MARKER), "w", encoding="utf-8") as f:
                    json.dump({"optimizerSteps": steps, "version": version}, f)
            with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
                config = hf_checkpoint.hf_config_out(self.config, self.layout) if hf else self.config.to_hf() | {"value_head": False}
                json.dump(config, f, indent=1)
            for name in MODEL_FILES:
                src = os.path.join(self.model_dir, name)
                if os.path.exists(src):
                    shutil.copyfile(src, os.path.join(tmp, name))
            if "onnx" in formats:
                on_cpu = (self.device.type == "cpu" and not self.dist.sharded
                          and all(p.dtype == torch.float32 for p in self.policy.parameters()))
                if on_cpu:
                    export_policy = self.policy
                else:  # a float32 CPU copy built from the gathered weights (GPU, bf16 or FSDP)
                    export_policy = Policy(dataclasses.replace(self.config, value_head=False))
                    export_policy.load_policy_state_dict({k: v.float().cpu() for k, v in sd.items()})
                export_onnx(export_policy, os.path.join(tmp, "model.onnx"))
                self.policy.train()
            with open(os.path.join(tmp, "READY"), "w") as f:
                f.write(version + "\n")
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
        self.weights_version = version
        st = [os.path.join(final, n) for n in (hf_checkpoint.INDEX, hf_checkpoint.SINGLE)]
        out["safetensorsPath"] = next((p for p in st if os.path.exists(p)), None)
        out["onnxPath"] = os.path.join(final, "model.onnx") if os.path.exists(os.path.join(final, "model.onnx")) else None
        return out

    def checkpoint(self, req: Dict[str, Any]) -> Dict[str, Any]:
        if self.pending_tokens:
            raise BatchProblem("GradientsPending", "a checkpoint was requested with gradients accumulated and "
                               "not yet applied", "call optim_step first; checkpoints hold model, optimizer and step")
        path = os.path.abspath(req.get("path") or os.path.join(self.out_dir, "checkpoints", f"step-{self.step:06d}"))
        state = self.dist.checkpoint_state(self.model, self.policy, self.optimizer)
        if not self.dist.is_main:
            return {}
        tmp = path + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        # Safetensors and JSON (checkpoint_io.py), never a pickle: a restore runs no code from the file.
        checkpoint_io.write(tmp, state["model"], state["optimizer"],
                            {"step": self.step, "weightsVersion": self.weights_version,
                             "protocolVersion": PROTOCOL_VERSION, "lr": self.lr})
        shutil.rmtree(path, ignore_errors=True)
        os.replace(tmp, path)
        return {"path": path, "step": self.step, "weightsVersion": self.weights_version}

    def restore(self, req: Dict[str, Any]) -> Dict[str, Any]:
        path = req.get("path")
        if not isinstance(path, str) or not path:
            raise BatchProblem("CheckpointNotFound", f"no checkpoint at {path}",
                               "give the directory a /checkpoint call returned")
        # Safetensors and JSON only (checkpoint_io.py); an older reins's trainer.pt pickle is refused.
        state = checkpoint_io.read(path)
        self.dist.load_checkpoint_state(self.model, self.policy, self.optimizer, state)
        self._zero_grads()
        self.step = int(state["step"])
        self.weights_version = state.get("weightsVersion")
        torch.set_rng_state(state["rng"])
        return {"path": os.path.abspath(path), "step": self.step, "weightsVersion": self.weights_version}

    def compute_logprobs(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """Logprob of each token given the previous ones (first token: null), untempered."""
        seqs = req.get("sequences")
        if not isinstance(seqs, list) or not seqs:
            raise BatchProblem("BadRequest", "`sequences` must be a non-empty list of token id lists",
                               "send {\"sequences\": [[1, 2, 3]]}")
        out: List[List[Optional[float]]] = []
        self.policy.eval()
        with torch.no_grad():
            for s in seqs:
                ids = torch.tensor([s], dtype=torch.long, device=self.device)
                if ids.numel() == 0 or int(ids.max()) >= self.config.vocab_size or int(ids.min()) < 0:
                    raise BatchProblem("TokenOutOfVocabulary", "a sequence is empty or has an id outside the "
                                       f"vocabulary ({self.config.vocab_size})", "send ids the model knows")
                pos = torch.arange(ids.shape[1], device=self.device)[None]
                lp_all = torch.log_softmax(self.model(ids, pos), dim=-1)[0]
                lp = lp_all[:-1].gather(-1, ids[0, 1:, None]).squeeze(-1)
                out.append([None] + [float(x) for x in lp])
        self.policy.train()
        return {"logprobs": out}

    def compute_values(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """Critic values per token (at the position predicting it; 0 where there is none), per row."""
        if self.policy.value_head is None:
            raise BatchProblem("NoValueHead", "this worker has no value head",
                               "start the worker with --value-head for PPO")
        batch = parse_batch(read_batch(req), self.config.vocab_size)
        rows = []
        self.policy.eval()
        with torch.no_grad():
            for r in batch.rows:
                r.loss_mask = r.pred >= 0
                r.coef = r.loss_mask.astype("float32")
                mb = build_micro_batch([r], self.device)
                _, values = self._select(self.model, mb, True)
                vals = [0.0] * r.tokens.shape[0]
                for k, v in zip(r.loss_mask.nonzero()[0].tolist(), values.tolist()):
                    vals[k] = v
                rows.append(vals)
        self.policy.train()
        return {"values": rows}


def split_by_row(rows, lp: torch.Tensor) -> List[tuple]:
    """The trainer's logprob of each trained token, per row of a micro-batch (rows' trained tokens
    are concatenated in row order, each row's in index order: packing.build_micro_batch)."""
    values = lp.detach().float().cpu().numpy()
    out, at = [], 0
    for r in rows:
        n = int(r.loss_mask.sum())
        out.append((r.rollout, r.leaf, values[at:at + n]))
        at += n
    return out


def write_logprobs(path: str, recorded: List[tuple], optimizer_steps: int) -> None:
    """Appends one JSON line per row: {"rollout", "leaf" (paths; null for a tree), "optimizerSteps"
    (the weights' optimizer steps when the row was trained: a step's later mini-batches see what the
    earlier ones moved), "logprobs"}, the trained tokens in the row's order (a tree: depth-first; a
    path: by position). Rounded to 1e-5."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        for rollout, leaf, values in recorded:
            f.write(json.dumps({"rollout": rollout, "leaf": leaf if leaf >= 0 else None, "optimizerSteps": optimizer_steps,
                                "logprobs": [round(float(v), 5) for v in values]}) + "\n")
