"""Random-weight model of a real shape + transformers reference logits for a mixed serving schedule.

Phase `make`: builds the model from a config.json with transformers' own init (seeded, on the GPU, bf16),
saves it with save_pretrained, defines a schedule (chunked prefill, a prefix-cache hit, decode steps) and
stores the logits of EVERY token the schedule feeds (run-schedule.ts samples every row of every step, in the
same order) from three transformers forwards of the same weights:
  bf16  - the bf16 model, sdpa attention, lm_head evaluated in f32 (transformers' own bf16 logits are rounded
          to 8 bits of mantissa, which ties near-equal top tokens);
  eager - the bf16 model with eager attention: a second bf16 implementation, i.e. how far bf16 itself spreads;
  f32   - the same weights upcast to f32, f32 arithmetic throughout (TF32 off): the accuracy reference.
Each forward runs once per sequence over every token it is fed; with causal attention, position p's logits
are the ones its row gets when the schedule feeds it (a chunk, a prefix-hit suffix or a decode step).
With --depths, logits are also taken after layer d (the final norm and lm_head applied to the residual stream
leaving layer d), and depth<d>/ holds a config that stops after d layers (weights linked), so Ferrum's
forward can be cut at the same place (its loader reads only the tensors the config names).
Files: reference-<bf16|eager|f32>-depth<d>.bin (f32, row-major [rows, vocab]), reference.json, schedule.json.

Phase `compare`: compare_reference.py (Ferrum's logits against each reference, per row kind, the verdicts).
"""
import argparse, json, os, sys, time
import numpy as np
import torch
from compare_reference import compare, reference_path


def schedule(vocab: int, gen: torch.Generator):
    rand = lambda n: torch.randint(0, vocab, (n,), generator=gen).tolist()
    a = rand(300)
    seqs = {
        "A": a + rand(10),
        "B": rand(180) + rand(10),
        "C": a[:128] + rand(72) + rand(10),  # shares A's first 128 tokens: prefilled from A's cached slots
        "D": rand(40) + rand(10),
    }
    prefix_hits = {"C": {"from": "A", "tokens": 128}}
    steps = [
        [("A", 0, 256), ("B", 0, 180)],
        [("A", 256, 44), ("B", 180, 1), ("D", 0, 40)],
        [("C", 128, 72), ("A", 300, 1), ("B", 181, 1), ("D", 40, 1)],
    ]
    done = {"A": 301, "B": 182, "C": 200, "D": 41}
    for _ in range(8):
        steps.append([(s, done[s], 1) for s in ("A", "B", "C", "D")])
        for s in done:
            done[s] += 1
    return seqs, steps, prefix_hits


def fed_rows(steps):
    """(sequence, position) of every token the schedule feeds, in feeding order: Ferrum's row order."""
    return [(name, start + i) for step in steps for name, start, count in step for i in range(count)]


def capture(model, seqs, rows, depths, device, path):
    """Writes path(d) for each depth d: the logits (f32 lm_head) of every row after layer d, in row order."""
    lengths = {}
    for name, pos in rows:
        lengths[name] = max(lengths.get(name, 0), pos + 1)
    grabbed, states = {}, {d: [] for d in depths}
    hooks = []
    for d in depths:
        def hook(_module, _inputs, out, d=d):
            grabbed[d] = (out[0] if isinstance(out, tuple) else out)[0]  # [positions, hidden]
        hooks.append(model.model.layers[d - 1].register_forward_hook(hook))
    with torch.no_grad():
        for name, length in lengths.items():
            model.model(torch.tensor([seqs[name][:length]], device=device))
            for d in depths:
                states[d].append(grabbed[d])
        for h in hooks:
            h.remove()
        # Row (name, pos) is row offsets[name] + pos of the sequences' hidden states concatenated in `lengths` order.
        offsets = dict(zip(lengths, np.cumsum([0] + list(lengths.values()))[:-1].tolist()))
        index = torch.tensor([offsets[name] + pos for name, pos in rows], device=device)
        head = model.get_output_embeddings().weight.float()
        for d in depths:
            hidden = model.model.norm(torch.cat(states[d])[index])
            (hidden.float() @ head.T).cpu().numpy().tofile(path(d))


def use_attention(model, name):
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(name)
    else:
        model.config._attn_implementation = name


def link_depth(model_dir, d):
    """depth<d>/: the config cut to d layers beside links to the full checkpoint's files."""
    sub = os.path.join(model_dir, f"depth{d}")
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(model_dir, "config.json")) as f:
        cut = json.load(f)
    cut["num_hidden_layers"] = d
    if isinstance(cut.get("layer_types"), list):
        cut["layer_types"] = cut["layer_types"][:d]
    with open(os.path.join(sub, "config.json"), "w") as f:
        json.dump(cut, f)
    for name in os.listdir(model_dir):
        if name.endswith(".safetensors") or name.endswith(".safetensors.index.json"):
            target = os.path.join(sub, name)
            if not os.path.exists(target):
                os.symlink(os.path.join(model_dir, name), target)


def make(args):
    from transformers import AutoConfig, AutoModelForCausalLM
    os.makedirs(args.model, exist_ok=True)
    with open(args.config) as f:
        raw = json.load(f)
    config = AutoConfig.for_model(**raw)
    num_layers = config.num_hidden_layers
    depths = sorted({int(d) for d in args.depths.split(",")} | {num_layers}) if args.depths else [num_layers]
    torch.manual_seed(args.seed)
    t0 = time.time()
    with torch.device(args.device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.eval()
    if args.embed_std is not None:
        # Optional: larger token embeddings keep token identity in the residual stream, so next-token
        # distributions are peaked instead of the near-uniform ones of transformers' default init.
        with torch.no_grad():
            model.get_input_embeddings().weight.normal_(0, args.embed_std)
    model.save_pretrained(args.model)
    for d in depths:
        if d < num_layers:
            link_depth(args.model, d)
    rotary = model.model.rotary_emb.inv_freq
    seqs, steps, prefix_hits = schedule(config.vocab_size, torch.Generator().manual_seed(args.seed))
    rows = fed_rows(steps)
    path = lambda kind: lambda d: reference_path(args.model, kind, d)
    capture(model, seqs, rows, depths, args.device, path("bf16"))
    use_attention(model, "eager")
    capture(model, seqs, rows, depths, args.device, path("eager"))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    model.float()
    capture(model, seqs, rows, depths, args.device, path("f32"))
    with open(os.path.join(args.model, "reference.json"), "w") as f:
        json.dump({"depths": depths, "numRows": len(rows), "vocabSize": config.vocab_size}, f)
    with open(os.path.join(args.model, "schedule.json"), "w") as f:
        json.dump({"seqs": seqs, "steps": steps, "prefixHits": prefix_hits,
                   "ropeFrequencies": "bf16" if rotary.dtype == torch.bfloat16 else "f32"}, f)
    print(f"made {args.model}: {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B params, "
          f"inv_freq {rotary.dtype}, {len(steps)} steps, {len(rows)} rows, depths {depths}, "
          f"{time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("phase", choices=["make", "compare"])
    parser.add_argument("--config")
    parser.add_argument("--model", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embed-std", type=float, default=None)
    parser.add_argument("--device", default="cuda", help="where make builds the model and compare computes")
    parser.add_argument("--depths", help="comma-separated layer counts to also take logits after (make)")
    parser.add_argument("--ferrum", help="Ferrum's logits file; {depth} is replaced by each depth (compare)")
    parser.add_argument("--results")
    args = parser.parse_args()
    if args.phase == "make":
        make(args)
    else:
        sys.exit(0 if compare(args.model, args.ferrum, args.results, args.device) else 1)
