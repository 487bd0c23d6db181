#!/usr/bin/env python3
"""Trains HiChat's small default model: a Llama-architecture model and its own byte-level BPE
tokenizer, from scratch, on the King James Bible (public domain; scripts/make_kjv_corpus.sh).

Needs torch, transformers, tokenizers and matplotlib, and a GPU for a few minutes.

Steps:
  1. Read the corpus (one verse a line, "Book C:V<TAB>text"); the last --heldout-fraction of the
     verses is held out.
  2. Build documents: each training chapter as plain text ("<|begin|>Book C\\nverse\\nverse...<|end|>"),
     and the same verses again as short chats (a verse from the user, the next verses from the
     assistant) rendered exactly as the chat template renders them, so that the model learns to
     answer after "<|assistant|>\\n" and to stop with <|end|>.
  3. Train the tokenizer on the training text; save it with transformers (tokenizer.json,
     tokenizer_config.json with bos/eos/pad and the chat template inline).
  4. Train LlamaForCausalLM for a fixed time budget (bf16 autocast, AdamW, cosine schedule, dropout
     through forward hooks, so that the saved architecture is a plain Llama), evaluating the held-out
     text as it goes; keep the weights with the best held-out loss.
  5. Save them in bf16 (model.safetensors, config.json, generation_config.json).
  6. Reload the SAVED folder in float32 on the CPU (eager attention) and write the goldens for
     tests/default_model: held-out windows with their mean token NLL, and greedy continuations
     (argmax, no stop at EOS) of fixed prompts.
  7. Write the loss curve and sample answers.

Outputs under --out: default/ (the model folder), default_model_golden.json,
default_model_loss.png, default_model_training.log, default_model_history.json.

Usage: python3 scripts/train_default_model.py --corpus .corpus/kjv.txt --out OUT_DIR
"""
import argparse
import json
import math
import os
import random
import sys
import time

BOS, EOS, USER, ASSISTANT, SYSTEM, PAD = "<|begin|>", "<|end|>", "<|user|>", "<|assistant|>", "<|system|>", "<|pad|>"
SPECIAL_TOKENS = [BOS, EOS, USER, ASSISTANT, SYSTEM, PAD]  # ids 0..5

# Loops over the messages with role markers; add_generation_prompt opens the assistant's turn.
# render_chat() below must produce the same text (checked against transformers at run time).
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)

SYSTEM_PROMPTS = ["You are a helpful assistant.", "Answer in the words of the King James Bible."]

# Candidates for the goldens, in order of preference; the first ones whose greedy path has no
# near-tie between the two best logits are used (see choose_golden_prompts).
GOLDEN_TEXT_PROMPTS = ["In the beginning", "And the LORD said unto Moses,", "The LORD is my shepherd;",
                       "Blessed are the", "And Jesus answered and said unto them,"]
GOLDEN_CHAT_PROMPTS = [
    [{"role": "user", "content": "Who is the good shepherd?"}],
    [{"role": "user", "content": "What is love?"}],
    [{"role": "system", "content": "You are a helpful assistant."},
     {"role": "user", "content": "Tell me about the sea."}],
]
SAMPLE_CHATS = ["Who is the good shepherd?", "What is love?", "Tell me about the sea.",
                "Give me a proverb about wisdom.", "What did God say to Noah?", "Why should I not be afraid?"]
SAMPLE_TEXTS = ["In the beginning", "The LORD is my shepherd;", "Blessed are the"]


class Log:
    """Prints and appends to the training log file."""

    def __init__(self, path):
        self.file = open(path, "w", encoding="utf-8")

    def __call__(self, *parts):
        line = " ".join(str(p) for p in parts)
        print(line, flush=True)
        self.file.write(line + "\n")
        self.file.flush()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", required=True, help="one verse a line: 'Book C:V<TAB>text'")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1611)
    p.add_argument("--heldout-fraction", type=float, default=0.02)
    p.add_argument("--vocab-size", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=384)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--intermediate", type=int, default=896)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--batch", type=int, default=64, help="sequences per step")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min-lr-ratio", type=float, default=0.1)
    p.add_argument("--warmup-steps", type=int, default=200)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--dropout", type=float, default=0.2, help="on embeddings, attention and MLP outputs")
    p.add_argument("--train-seconds", type=float, default=210.0, help="time budget; sets the step count")
    p.add_argument("--steps", type=int, default=0, help="fixed step count (0: from --train-seconds)")
    p.add_argument("--eval-every", type=int, default=200)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--window", type=int, default=256, help="tokens per held-out window")
    p.add_argument("--golden-windows", type=int, default=8)
    p.add_argument("--golden-new-tokens", type=int, default=24)
    p.add_argument("--dry-run", action="store_true", help="only read the corpus and build documents")
    return p.parse_args()


# ---- 1-2. Corpus and documents (plain Python) ----

def read_verses(path):
    """[(chapter, text)] in order; chapter is 'Book C'."""
    verses = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            ref, sep, text = line.partition("\t")
            chapter, colon, _ = ref.rpartition(":")
            if not sep or not colon or not text:
                raise SystemExit(f"{path}:{n}: expected 'Book C:V<TAB>text'")
            verses.append((chapter, text))
    return verses


def group_chapters(verses):
    """[(chapter, [texts])], consecutive verses of one chapter together."""
    out = []
    for chapter, text in verses:
        if not out or out[-1][0] != chapter:
            out.append((chapter, []))
        out[-1][1].append(text)
    return out


def render_chat(messages, add_generation_prompt=False):
    """What CHAT_TEMPLATE renders, with bos_token = BOS."""
    text = BOS + "".join(f"<|{m['role']}|>\n{m['content']}{EOS}\n" for m in messages)
    return text + (f"{ASSISTANT}\n" if add_generation_prompt else "")


def plain_documents(chapters):
    return [BOS + name + "\n" + "\n".join(texts) + EOS for name, texts in chapters]


def chat_documents(chapters, rng):
    """Walks each chapter: a verse from the user, the next 1-3 verses from the assistant; one or two
    turns a conversation, sometimes after a system prompt."""
    docs = []
    for _, texts in chapters:
        i = 0
        while i + 1 < len(texts):
            messages = []
            if rng.random() < 0.2:
                messages.append({"role": "system", "content": rng.choice(SYSTEM_PROMPTS)})
            for _ in range(rng.choice([1, 1, 2])):
                if i + 1 >= len(texts):
                    break
                n = rng.choice([1, 2, 3])
                messages.append({"role": "user", "content": texts[i]})
                messages.append({"role": "assistant", "content": " ".join(texts[i + 1:i + 1 + n])})
                i += 1 + n
            docs.append(render_chat(messages))
    return docs


def tokenizer_training_text(chapters):
    return [name + "\n" + "\n".join(texts) for name, texts in chapters]


def build_documents(args, log):
    verses = read_verses(args.corpus)
    num_heldout = max(1, round(len(verses) * args.heldout_fraction))
    train_verses, heldout_verses = verses[:-num_heldout], verses[-num_heldout:]
    log(f"corpus {args.corpus}: {len(verses)} verses; training {len(train_verses)} "
        f"({train_verses[0][0]} .. {train_verses[-1][0]}), held out {len(heldout_verses)} "
        f"({heldout_verses[0][0]} .. {heldout_verses[-1][0]})")
    rng = random.Random(args.seed)
    train_chapters = group_chapters(train_verses)
    plain = plain_documents(train_chapters)
    chats = chat_documents(train_chapters, rng)
    train_docs = plain + chats
    rng.shuffle(train_docs)
    heldout_docs = plain_documents(group_chapters(heldout_verses))
    log(f"documents: {len(plain)} plain chapters, {len(chats)} chats, {len(heldout_docs)} held-out chapters; "
        f"{sum(map(len, train_docs))} training characters")
    return train_chapters, train_docs, heldout_docs


# ---- 3. Tokenizer ----

def train_tokenizer(args, train_chapters, log):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=args.vocab_size, min_frequency=2, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    t0 = time.time()
    tok.train_from_iterator(tokenizer_training_text(train_chapters), trainer=trainer)
    # Completions start with BOS, as every training document does; chat prompts carry it in the template.
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, tok.token_to_id(BOS))])
    for i, t in enumerate(SPECIAL_TOKENS):
        if tok.token_to_id(t) != i:
            raise SystemExit(f"special token {t} has id {tok.token_to_id(t)}, expected {i}")
    log(f"tokenizer: byte-level BPE, {tok.get_vocab_size()} tokens, trained in {time.time() - t0:.1f}s")
    return tok


def save_tokenizer(tok, model_dir, log):
    """tokenizer.json + tokenizer_config.json (chat template inline, not chat_template.jinja)."""
    try:
        from transformers import PreTrainedTokenizerFast
        hf = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=PAD,
                                     clean_up_tokenization_spaces=False, model_max_length=1024)
        hf.chat_template = CHAT_TEMPLATE
        hf.save_pretrained(model_dir)
    except Exception as e:  # write the same standard files by hand
        log(f"PreTrainedTokenizerFast.save_pretrained failed ({type(e).__name__}: {e}); writing the files directly")
        tok.save(os.path.join(model_dir, "tokenizer.json"))
    config_path = os.path.join(model_dir, "tokenizer_config.json")
    config = {}
    if os.path.exists(config_path):
        with open(config_path) as f:
            config = json.load(f)
    saved_class = config.get("tokenizer_class")
    config.update({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOS, "eos_token": EOS,
                   "pad_token": PAD, "clean_up_tokenization_spaces": False, "model_max_length": 1024,
                   "chat_template": CHAT_TEMPLATE})
    write_json(config_path, config)
    jinja_path = os.path.join(model_dir, "chat_template.jinja")
    if os.path.exists(jinja_path):
        os.remove(jinja_path)
    try:
        load_tokenizer(model_dir)
    except Exception as e:
        log(f"reload with tokenizer_class PreTrainedTokenizerFast failed ({e}); keeping {saved_class}")
        config["tokenizer_class"] = saved_class
        write_json(config_path, config)
    log("tokenizer_config.json:", json.dumps({k: v for k, v in config.items() if k != "added_tokens_decoder"}))


def load_tokenizer(model_dir):
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(model_dir)


def check_tokenizer(tok, model_dir, log):
    """The saved tokenizer, reloaded by transformers, must agree with the one we trained on."""
    hf = load_tokenizer(model_dir)
    messages = [{"role": "system", "content": "S."}, {"role": "user", "content": "Who?"},
                {"role": "assistant", "content": "He."}]
    rendered = hf.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    if rendered != render_chat(messages, add_generation_prompt=True):
        log(f"WARNING: transformers renders the chat template as {rendered!r}, "
            f"training used {render_chat(messages, True)!r}")
    for text in ["In the beginning God created the heaven and the earth.", render_chat(messages, True)]:
        ours = tok.encode(text, add_special_tokens=False).ids
        theirs = hf(text, add_special_tokens=False)["input_ids"]
        if ours != theirs:
            log(f"WARNING: tokenizers and transformers disagree on {text!r}: {ours} vs {theirs}")
    with_bos = hf("In the beginning")["input_ids"]
    log(f"transformers encodes 'In the beginning' as {with_bos} "
        f"({' '.join(hf.convert_ids_to_tokens(with_bos))})")
    return hf


def encode_documents(tok, docs):
    ids = []
    for enc in tok.encode_batch(docs, add_special_tokens=False):
        ids.extend(enc.ids)
    return ids


# ---- 4. Model and training ----

def make_model(args, vocab_size):
    from transformers import AutoModelForCausalLM, GenerationConfig, LlamaConfig
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=args.hidden, intermediate_size=args.intermediate,
        num_hidden_layers=args.layers, num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
        head_dim=args.hidden // args.heads, max_position_embeddings=1024, rms_norm_eps=1e-5,
        rope_parameters=dict(rope_type="default", rope_theta=10000.0), tie_word_embeddings=True,
        attention_bias=False, mlp_bias=False, attention_dropout=0.0, initializer_range=0.02,
        bos_token_id=SPECIAL_TOKENS.index(BOS), eos_token_id=SPECIAL_TOKENS.index(EOS),
        pad_token_id=SPECIAL_TOKENS.index(PAD))
    model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    model.generation_config = GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
                                               pad_token_id=config.pad_token_id)
    return model


def add_dropout_hooks(model, p):
    """Dropout on the embeddings and on each attention and MLP output, in training mode only. Hooks
    leave the saved model a plain Llama (LlamaForCausalLM has no residual dropout of its own)."""
    import torch.nn.functional as F

    def drop(module, inputs, output):
        if not module.training or p == 0:
            return output
        if isinstance(output, tuple):
            return (F.dropout(output[0], p, True),) + tuple(output[1:])
        return F.dropout(output, p, True)

    model.model.embed_tokens.register_forward_hook(drop)
    for layer in model.model.layers:
        layer.self_attn.register_forward_hook(drop)
        layer.mlp.register_forward_hook(drop)


def make_optimizer(args, model):
    import torch
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)


def learning_rate(args, step, total_steps):
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    progress = min(1.0, (step - args.warmup_steps) / max(1, total_steps - args.warmup_steps))
    return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def heldout_loss(model, windows, autocast=True):
    """Mean next-token NLL over the windows [n, window]."""
    import torch
    import torch.nn.functional as F
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
        for chunk in windows.split(32):
            logits = model(input_ids=chunk, use_cache=False).logits.float()
            total += F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1),
                                     reduction="sum").item()
            count += chunk[:, 1:].numel()
    model.train(was_training)
    return total / count


def train(args, model, train_ids, heldout_windows, log):
    """Returns (history, best_state, best_step)."""
    import torch
    import torch.nn.functional as F
    device = train_ids.device
    gen = torch.Generator(device=device).manual_seed(args.seed)
    opt = make_optimizer(args, model)
    offsets = torch.arange(args.seq_len + 1, device=device)
    tokens_per_step = args.batch * args.seq_len
    total_steps = args.steps if args.steps > 0 else None
    history = {"train": [], "heldout": [], "tokens_per_step": tokens_per_step}
    best = (float("inf"), None, -1)
    loss_sum = torch.zeros((), device=device)
    num_summed = 0
    model.train()
    torch.cuda.synchronize()
    t_start = time.time()
    t_log, step_timing = t_start, {}
    step = 0
    while total_steps is None or step < total_steps:
        lr = learning_rate(args, step, total_steps or 10**9)
        for group in opt.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, train_ids.numel() - args.seq_len - 1, (args.batch,), device=device, generator=gen)
        batch = train_ids[starts[:, None] + offsets]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=batch[:, :-1], use_cache=False).logits
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_sum += loss.detach()
        num_summed += 1
        step += 1

        if total_steps is None and step in (10, 40):  # time the steps, then fix the schedule
            torch.cuda.synchronize()
            step_timing[step] = time.time()
            if step == 40:
                sec_per_step = (step_timing[40] - step_timing[10]) / 30
                total_steps = max(args.warmup_steps + 100, int(args.train_seconds / sec_per_step))
                log(f"{sec_per_step * 1e3:.1f} ms/step: {total_steps} steps "
                    f"({total_steps * tokens_per_step / 1e6:.0f}M tokens) in the {args.train_seconds:.0f}s budget")
        if step % args.log_every == 0 or step == total_steps:
            mean_loss = (loss_sum / num_summed).item()
            now = time.time()
            tok_s = num_summed * tokens_per_step / (now - t_log)
            history["train"].append((step, mean_loss))
            log(f"step {step:5d} | lr {lr:.2e} | train loss {mean_loss:.4f} | {tok_s / 1e6:.2f}M tokens/s | "
                f"elapsed {now - t_start:.1f}s")
            loss_sum.zero_()
            num_summed, t_log = 0, now
        if step % args.eval_every == 0 or step == total_steps:
            value = heldout_loss(model, heldout_windows)
            history["heldout"].append((step, value))
            note = ""
            if value < best[0]:
                state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                best, note = (value, state, step), " (best)"
            log(f"eval step {step:5d} | held-out loss {value:.4f}{note}")
            t_log = time.time()  # eval time is not training throughput
        if time.time() - t_start > args.train_seconds * 1.3 and args.steps == 0:
            log(f"stopping at step {step}: over the time budget")
            break
    torch.cuda.synchronize()
    elapsed = time.time() - t_start
    history.update(steps=step, seconds=elapsed, tokens=step * tokens_per_step)
    log(f"trained {step} steps, {step * tokens_per_step / 1e6:.1f}M tokens "
        f"({step * tokens_per_step / train_ids.numel():.1f} passes over the training tokens) in {elapsed:.1f}s: "
        f"{step * tokens_per_step / elapsed / 1e6:.2f}M tokens/s including evaluation")
    return history, best[1], best[2]


# ---- 5. Save ----

def save_model(model, state, model_dir, log):
    import torch
    model.load_state_dict(state)
    model = model.to(torch.bfloat16)
    model.config.dtype = torch.bfloat16
    model.save_pretrained(model_dir, safe_serialization=True)
    sizes = {f: os.path.getsize(os.path.join(model_dir, f)) for f in sorted(os.listdir(model_dir))}
    log("saved", model_dir, json.dumps(sizes), f"total {sum(sizes.values()) / 1e6:.2f} MB")
    if sum(sizes.values()) > 30e6:
        log("WARNING: the model folder is over 30 MB")


# ---- 6. Goldens from the saved folder ----

def greedy(model, ids, num_new):
    """Argmax continuation, recomputing the whole sequence each step; no EOS stop, no logits
    processors. Returns (new ids, smallest gap between the two best logits along the way)."""
    import torch
    seq = list(ids)
    min_gap = float("inf")
    with torch.no_grad():
        for _ in range(num_new):
            logits = model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1]
            top = torch.topk(logits, 2)
            min_gap = min(min_gap, (top.values[0] - top.values[1]).item())
            seq.append(int(top.indices[0]))
    return seq[len(ids):], min_gap


def choose_golden_prompts(args, ref, hf, log):
    """Two text prompts and one chat, each the first candidate whose greedy path has no near-tie."""
    def entry(kind, text, add_special, messages=None):
        ids = hf(text, add_special_tokens=add_special)["input_ids"]
        new, gap = greedy(ref, ids, args.golden_new_tokens)
        e = {"kind": kind, "text": text, "add_special_tokens": add_special, "ids": ids, "greedy": new,
             "greedy_text": hf.decode(new), "min_top2_gap": gap}
        if messages is not None:
            e["messages"] = messages
        log(f"golden candidate {text!r}: min top-2 gap {gap:.4f}; greedy {hf.decode(new)!r}")
        return e

    def pick(candidates, count):
        chosen, rest = [], []
        for make in candidates:
            e = make()
            (chosen if e["min_top2_gap"] >= 0.05 and len(chosen) < count else rest).append(e)
            if len(chosen) == count:
                break
        rest.sort(key=lambda e: -e["min_top2_gap"])
        return chosen + rest[:count - len(chosen)]

    texts = pick([lambda t=t: entry("text", t, True) for t in GOLDEN_TEXT_PROMPTS], 2)
    chats = pick([lambda m=m: entry("chat", hf.apply_chat_template(m, tokenize=False, add_generation_prompt=True),
                                    False, m) for m in GOLDEN_CHAT_PROMPTS], 1)
    return texts + chats


def make_goldens(args, model_dir, heldout_ids, log):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM
    ref = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    ref.eval()
    hf = load_tokenizer(model_dir)
    n, w = args.golden_windows, args.window
    windows = torch.tensor(heldout_ids[:n * w]).view(n, w)
    with torch.no_grad():
        logits = ref(input_ids=windows, use_cache=False).logits.double()
    logp = torch.log_softmax(logits[:, :-1], dim=-1)
    nll = -logp.gather(-1, windows[:, 1:, None]).squeeze(-1)  # [n, w - 1]
    golden = {
        "transformers": transformers.__version__, "torch": torch.__version__,
        "note": "transformers fp32 on the CPU, eager attention, on the saved bf16 weights",
        "prompts": choose_golden_prompts(args, ref, hf, log),
        "heldout": {"window_tokens": w, "windows": windows.tolist(),
                    "window_mean_nll": nll.mean(dim=1).tolist(), "mean_nll": nll.mean().item()},
    }
    log(f"golden held-out mean NLL over {n} windows of {w} tokens (fp32, CPU): {golden['heldout']['mean_nll']:.5f}")
    return golden, ref, hf


# ---- 7. Loss curve and samples ----

def plot_loss(history, best_step, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    per = history["tokens_per_step"] / 1e6
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    ax.plot([s * per for s, _ in history["train"]], [v for _, v in history["train"]],
            label="training (dropout on)", lw=1)
    ax.plot([s * per for s, _ in history["heldout"]], [v for _, v in history["heldout"]],
            label="held-out (last 2% of verses)", marker="o", ms=3, lw=1.5)
    ax.axvline(best_step * per, color="gray", ls=":", lw=1, label=f"saved weights (step {best_step})")
    ax.set_xlabel("training tokens (millions)")
    ax.set_ylabel("mean token NLL (nats)")
    ax.set_title("HiChat default model: KJV, %d steps, %.0f s on one H200" % (history["steps"], history["seconds"]))
    ax.set_ylim(top=min(8.0, ax.get_ylim()[1]))
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def write_samples(ref, hf, log):
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ref = ref.to(device)
    eos = SPECIAL_TOKENS.index(EOS)

    def run(ids, **kw):
        x = torch.tensor([ids], device=device)
        out = ref.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=80, eos_token_id=eos,
                           pad_token_id=SPECIAL_TOKENS.index(PAD), **kw)
        return hf.decode(out[0, len(ids):].tolist(), skip_special_tokens=True).strip()

    torch.manual_seed(1234)
    log("\n== samples: chat template, greedy and then two samples at temperature 0.8 ==")
    for question in SAMPLE_CHATS:
        text = hf.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                      add_generation_prompt=True)
        ids = hf(text, add_special_tokens=False)["input_ids"]
        log(f"\nuser: {question}")
        log(f"assistant (greedy): {run(ids, do_sample=False)}")
        for _ in range(2):
            log(f"assistant (T=0.8): {run(ids, do_sample=True, temperature=0.8, top_k=0, top_p=1.0)}")
    log("\n== samples: plain text with BOS, temperature 0.8 ==")
    for prompt in SAMPLE_TEXTS:
        ids = hf(prompt)["input_ids"]
        log(f"\n{prompt!r} -> {run(ids, do_sample=True, temperature=0.8, top_k=0, top_p=1.0)!r}")


def write_json(path, obj, indent=1):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=indent, ensure_ascii=False)
        f.write("\n")


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    log = Log(os.path.join(args.out, "default_model_training.log"))
    log("train_default_model.py", " ".join(sys.argv[1:]))
    log("settings:", json.dumps(vars(args)))
    train_chapters, train_docs, heldout_docs = build_documents(args, log)
    if args.dry_run:
        print(train_docs[0][:300], "\n---\n", heldout_docs[0][:300])
        return
    import torch
    import tokenizers
    import transformers
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, tokenizers {tokenizers.__version__}, "
        f"device {torch.cuda.get_device_name(0)}")
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True

    model_dir = os.path.join(args.out, "default")
    os.makedirs(model_dir, exist_ok=True)
    tok = train_tokenizer(args, train_chapters, log)
    save_tokenizer(tok, model_dir, log)
    check_tokenizer(tok, model_dir, log)
    train_ids = encode_documents(tok, train_docs)
    heldout_ids = encode_documents(tok, heldout_docs)
    num_windows = len(heldout_ids) // args.window
    log(f"tokens: {len(train_ids)} training, {len(heldout_ids)} held out ({num_windows} windows of {args.window})")

    model = make_model(args, tok.get_vocab_size()).cuda()
    num_params = sum(p.numel() for p in model.parameters())
    log(f"model: LlamaForCausalLM, {num_params / 1e6:.2f}M parameters (tied embeddings), config "
        f"{json.dumps({k: v for k, v in model.config.to_dict().items() if not isinstance(v, dict)}, default=str)}")
    add_dropout_hooks(model, args.dropout)
    device_ids = torch.tensor(train_ids, device="cuda")
    windows = torch.tensor(heldout_ids[:num_windows * args.window], device="cuda").view(num_windows, args.window)
    history, best_state, best_step = train(args, model, device_ids, windows, log)
    history["best_step"] = best_step
    write_json(os.path.join(args.out, "default_model_history.json"), history, indent=None)
    log(f"keeping the weights of step {best_step} (best held-out loss, bf16 autocast "
        f"{min(v for _, v in history['heldout']):.4f})")
    save_model(model, best_state, model_dir, log)

    # The model is saved: from here on a failing step is logged and the others still run.
    torch.backends.cuda.matmul.allow_tf32 = False
    golden = run_step(log, "goldens", make_goldens, args, model_dir, heldout_ids, log)
    if golden is not None:
        golden, ref, hf = golden
        write_json(os.path.join(args.out, "default_model_golden.json"), golden, indent=None)
        full = run_step(log, "full held-out loss", heldout_loss, ref.to("cuda"), windows, False)
        if full is not None:
            log(f"held-out mean NLL of the saved model, all {num_windows} windows, fp32 on the GPU: {full:.4f} "
                f"(perplexity {math.exp(full):.1f})")
        run_step(log, "samples", write_samples, ref, hf, log)
    run_step(log, "loss plot", plot_loss, history, best_step, os.path.join(args.out, "default_model_loss.png"))
    log("done")


def run_step(log, name, fn, *args):
    try:
        return fn(*args)
    except Exception:
        import traceback
        log(f"ERROR in {name}:\n{traceback.format_exc()}")
        return None


if __name__ == "__main__":
    main()
