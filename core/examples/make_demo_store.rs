//! Regenerate `assets/tokenizer.json` and `assets/demo-store/`.
//!
//! `cargo run --example make_demo_store` trains a small byte-level BPE tokenizer on the demo
//! conversations, then writes one rollout per situation the explorer explains, following the
//! writer's layout (intents, one fsynced record line per call, the state file), with prompts
//! built the way a chat harness builds them: each call's prompt is the previous prompt, the
//! previous generation and the environment's reply, token for token.

use std::path::Path;

use serde_json::{Value, json};
use tokenizers::models::bpe::{BPE, BpeTrainerBuilder};
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{AddedToken, TokenizerBuilder, TokenizerImpl};
use tokscope_core::detok::Detokenizer;
use tokscope_testkit::{Call, Lineage, Rollout};

const SPECIAL: [&str; 5] = [
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|tool|>",
    "<|end|>",
];

const SYSTEM: &str = "You are a careful coding agent. Use the tools to inspect the repository, \
                      then answer with a short explanation.";

const TASKS: [&str; 6] = [
    "The test suite fails on the parser module. Find the failing test and explain why it fails.",
    "Count the lines of Rust code in the src directory and report the largest file.",
    "Find where the configuration file is loaded and tell me which keys are required.",
    "The build is slow. Look at the dependencies and suggest one to remove.",
    "Summarize what the main function does in three sentences.",
    "Check whether the README explains how to run the tests.",
];

/// (assistant text, tool name, tool arguments, tool output)
const STEPS: [(&str, &str, &str, &str); 6] = [
    (
        "Let me look at the repository layout first.",
        "bash",
        "{\"cmd\": \"ls src\"}",
        "main.rs\nparser.rs\nconfig.rs\nlib.rs",
    ),
    (
        "I will run the tests to see which one fails.",
        "bash",
        "{\"cmd\": \"cargo test parser\"}",
        "test parser::tests::parses_nested_lists ... FAILED\nassertion failed: left == right",
    ),
    (
        "Now I read the parser to find the nested list handling.",
        "read_file",
        "{\"path\": \"src/parser.rs\"}",
        "fn parse_list(&mut self) -> List {\n    let depth = self.depth + 1;\n    // missing: reset depth\n}",
    ),
    (
        "The depth counter is never reset. I will check the config loader too.",
        "read_file",
        "{\"path\": \"src/config.rs\"}",
        "pub fn load(path: &Path) -> Config {\n    let text = read(path);\n    toml::from_str(&text)\n}",
    ),
    (
        "Let me count the lines in each file.",
        "bash",
        "{\"cmd\": \"wc -l src/*.rs\"}",
        "  120 src/main.rs\n  480 src/parser.rs\n   64 src/config.rs\n  664 total",
    ),
    (
        "I will search the README for a test section.",
        "bash",
        "{\"cmd\": \"grep -n test README.md\"}",
        "12: Run the tests with cargo test.",
    ),
];

const ANSWERS: [&str; 3] = [
    "The failing test is parses_nested_lists: parse_list increments the depth but never resets it, \
     so the second list is parsed one level too deep.",
    "The parser is the largest file with 480 lines; the crate has 664 lines of Rust in total.",
    "Yes: line 12 of the README says to run the tests with cargo test.",
];

const SUBAGENT: &str = "Summarize the file for the parent agent in one line.";
const COMPACTED: &str = "Summary of the conversation so far: the parser test fails because the depth \
                         counter is never reset. Continue from here.";

fn corpus() -> Vec<String> {
    let mut texts = vec![
        SYSTEM.to_string(),
        SUBAGENT.to_string(),
        COMPACTED.to_string(),
    ];
    texts.extend(TASKS.iter().map(|t| t.to_string()));
    for (say, name, args, out) in STEPS {
        texts.extend([say, name, args, out].map(String::from));
    }
    texts.extend(ANSWERS.iter().map(|t| t.to_string()));
    texts
}

fn train_tokenizer(path: &Path) {
    let mut trainer = BpeTrainerBuilder::new()
        .vocab_size(900)
        .min_frequency(1)
        .show_progress(false)
        .special_tokens(SPECIAL.iter().map(|s| AddedToken::from(*s, true)).collect())
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
        .build();
    let mut tokenizer: TokenizerImpl<BPE, NormalizerWrapper, ByteLevel, ByteLevel, ByteLevel> =
        TokenizerBuilder::new()
            .with_model(BPE::default())
            .with_normalizer(None)
            .with_pre_tokenizer(Some(ByteLevel::new(false, true, true)))
            .with_post_processor(Some(ByteLevel::new(false, true, true)))
            .with_decoder(Some(ByteLevel::new(false, true, true)))
            .build()
            .expect("tokenizer");
    let corpus = corpus();
    tokenizer.train(&mut trainer, corpus.iter()).expect("train");
    tokenizer.save(path, true).expect("save tokenizer");
}

/// Builds one conversation token by token, the way a chat harness extends its prompt.
struct Conversation<'a> {
    tok: &'a Detokenizer,
    prompt: Vec<u64>,
}

impl<'a> Conversation<'a> {
    fn new(tok: &'a Detokenizer, system: &str, user: &str) -> Self {
        let text = format!("<|system|>\n{system}\n<|user|>\n{user}\n<|assistant|>\n");
        Conversation {
            tok,
            prompt: tok.encode(&text),
        }
    }

    fn assistant(&self, say: &str, tool: Option<(&str, &str)>) -> Vec<u64> {
        let text = match tool {
            Some((name, args)) => format!("{say}\n<tool_call>{name} {args}</tool_call><|end|>"),
            None => format!("{say}<|end|>"),
        };
        self.tok.encode(&text)
    }

    fn environment(&self, output: &str) -> Vec<u64> {
        self.tok
            .encode(&format!("\n<|tool|>\n{output}\n<|assistant|>\n"))
    }
}

fn items(id: &str, say: &str, tool: Option<(&str, &str)>) -> Vec<Value> {
    let mut items = vec![
        json!({"type": "message", "role": "assistant", "id": format!("msg_{id}"),
        "content": [{"type": "output_text", "text": say}]}),
    ];
    if let Some((name, args)) = tool {
        items.push(json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
            "name": name, "arguments": args}));
    }
    items
}

/// One assistant turn: what it says, its tool call (name, arguments), the tool's output.
type Turn = (
    String,
    Option<(&'static str, &'static str)>,
    Option<&'static str>,
);

/// An agent loop: `steps` tool turns, then (optionally) a final answer.
fn agent(
    tok: &Detokenizer,
    rid: &str,
    task: usize,
    steps: &[usize],
    answer: Option<usize>,
    start: f64,
) -> Vec<Call> {
    let mut convo = Conversation::new(tok, SYSTEM, TASKS[task]);
    let mut calls = Vec::new();
    let mut parent: Option<String> = None;
    let mut time = start;
    let turns: Vec<Turn> = steps
        .iter()
        .map(|&s| {
            (
                STEPS[s].0.to_string(),
                Some((STEPS[s].1, STEPS[s].2)),
                Some(STEPS[s].3),
            )
        })
        .chain(answer.map(|a| (ANSWERS[a].to_string(), None, None)))
        .collect();
    for (index, (say, tool, output)) in turns.into_iter().enumerate() {
        let id = format!("{rid}-c{:03}", calls.len() + 1);
        let generation = convo.assistant(&say, tool);
        let mut call = match &parent {
            None => Call::root(&id, convo.prompt.clone(), generation.clone(), time),
            Some(p) => Call::child(&id, p, convo.prompt.clone(), generation.clone(), time),
        };
        call.output_items = Some(items(&id, &say, tool));
        call.overrides.insert(
            "token_item_index".into(),
            json!(call.output_items.as_ref().unwrap().len() - 1),
        );
        call.overrides
            .insert("prefix_requested".into(), json!(index > 0));
        call.overrides
            .insert("prefix_supplied".into(), json!(index > 0));
        calls.push(call);
        convo.prompt.extend_from_slice(&generation);
        if let Some(output) = output {
            convo.prompt.extend(convo.environment(output));
        }
        parent = Some(id);
        time += 1.5 + (index % 3) as f64 * 0.7;
    }
    calls
}

fn rollout(id: &str, calls: Vec<Call>) -> Rollout {
    Rollout {
        id: id.into(),
        calls,
        frozen: true,
        ..Rollout::default()
    }
}

fn main() {
    let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets");
    let tokenizer_path = assets.join("tokenizer.json");
    train_tokenizer(&tokenizer_path);
    let tok = Detokenizer::load(&tokenizer_path).expect("load the trained tokenizer");
    let store = assets.join("demo-store");
    let _ = std::fs::remove_dir_all(&store);
    std::fs::create_dir_all(&store).expect("create the demo store");
    let t0 = 1_790_000_000.0;
    let mut rollouts = Vec::new();

    // A clean agent run: every call extends the previous one.
    rollouts.push(rollout(
        "demo-clean",
        agent(&tok, "demo-clean", 0, &[0, 1, 2], Some(0), t0),
    ));

    // A retried middle call: the sibling the next call extends is kept, the other quarantined.
    let mut calls = agent(&tok, "demo-retry", 1, &[0, 4], Some(1), t0 + 100.0);
    let mut lost = calls[1].clone();
    lost.id = "demo-retry-c002-timeout".into();
    lost.generation = tok.encode("I will count the lines with a different command.<|end|>");
    lost.created_at -= 0.5;
    lost.output_items = Some(items(
        &lost.id,
        "I will count the lines with a different command.",
        None,
    ));
    lost.overrides.insert("token_item_index".into(), json!(0));
    calls.insert(1, lost);
    rollouts.push(rollout("demo-retry", calls));

    // A retried final call: nobody knows which answer the client kept.
    let mut calls = agent(&tok, "demo-final-retry", 5, &[5], Some(2), t0 + 200.0);
    let mut again = calls.last().unwrap().clone();
    again.id = "demo-final-retry-c003-retry".into();
    again.generation = tok.encode("The README has a test section at line 12.<|end|>");
    again.created_at += 2.0;
    again.output_items = Some(items(
        &again.id,
        "The README has a test section at line 12.",
        None,
    ));
    again.overrides.insert("token_item_index".into(), json!(0));
    calls.push(again);
    rollouts.push(rollout("demo-final-retry", calls));

    // A subagent with its own conversation: a second root, a second chain.
    let mut calls = agent(&tok, "demo-subagent", 0, &[0, 2], Some(0), t0 + 300.0);
    calls.extend(agent(&tok, "demo-subagent-sub", 4, &[2], None, t0 + 302.0));
    rollouts.push(rollout("demo-subagent", calls));

    // A context compaction: the harness rewrote the prompt; the resolver could not link it.
    let mut calls = agent(&tok, "demo-compaction", 0, &[0, 1], None, t0 + 400.0);
    let mut compacted = agent(&tok, "demo-compaction-k", 0, &[2], Some(0), t0 + 405.0);
    let summary = Conversation::new(&tok, SYSTEM, COMPACTED).prompt;
    compacted[0].prompt = summary;
    compacted[0].resolution = Some("unresolved");
    compacted[0]
        .overrides
        .insert("parent_resolution_reason".into(), json!("no_match"));
    let first = &compacted[0];
    let mut rebuilt = vec![first.clone()];
    let mut prompt = first.prompt.clone();
    prompt.extend_from_slice(&first.generation);
    prompt.extend(Conversation::new(&tok, "", "").environment(STEPS[2].3));
    let mut next = compacted[1].clone();
    next.prompt = prompt;
    rebuilt.push(next);
    calls.extend(rebuilt);
    rollouts.push(rollout("demo-compaction", calls));

    // A prompt that no longer extends its claimed parent (a rewritten tool output).
    let mut calls = agent(&tok, "demo-mismatch", 2, &[0, 3], Some(0), t0 + 500.0);
    // The harness re-rendered an earlier tool output: one token inside the parent's part differs.
    let at = calls[1].prompt.len() - 6;
    calls[2].prompt[at] = tok.encode(" config")[0];
    rollouts.push(rollout("demo-mismatch", calls));

    // An empty generation in the middle: its child recovers the grandparent by prefix.
    let mut calls = agent(&tok, "demo-empty", 1, &[0, 4], Some(1), t0 + 600.0);
    calls[1].generation.clear();
    calls[1].output_items = Some(Vec::new());
    calls[1]
        .overrides
        .insert("token_item_index".into(), Value::Null);
    let prompt_1 = calls[1].prompt.clone();
    let tail: Vec<u64> = calls[2].prompt[prompt_1.len()..].to_vec();
    calls[2].prompt = [prompt_1, tail].concat();
    rollouts.push(rollout("demo-empty", calls));

    // A call dispatched and never recorded: a dangling intent masks the frozen rollout.
    let mut dangling = rollout(
        "demo-dangling",
        agent(&tok, "demo-dangling", 3, &[0, 4], None, t0 + 700.0),
    );
    dangling.extra_intents.push("demo-dangling-c003".into());
    rollouts.push(dangling);

    // Still being collected: one call in flight.
    let mut live = rollout(
        "demo-live",
        agent(&tok, "demo-live", 4, &[0], None, t0 + 800.0),
    );
    live.frozen = false;
    live.extra_intents.push("demo-live-c002".into());
    rollouts.push(live);

    // A torn final line (a write in progress) is ignored.
    let mut torn = rollout(
        "demo-torn",
        agent(&tok, "demo-torn", 5, &[5], Some(2), t0 + 900.0),
    );
    torn.trailing =
        br#"{"continuation_context_digest":"","created_at":1790000999.0,"cum_len":"#.to_vec();
    rollouts.push(torn);

    // Delta records: each prompt stores only the suffix after its parent.
    let mut calls = agent(&tok, "demo-delta", 0, &[0, 1, 2, 3], Some(0), t0 + 1000.0);
    let mut cumulative: Vec<u64> = Vec::new();
    for (index, call) in calls.iter_mut().enumerate() {
        let full = call.prompt.clone();
        let mut cum = full.clone();
        cum.extend_from_slice(&call.generation);
        if index > 0 {
            call.prompt = full[cumulative.len()..].to_vec();
            call.delta = true;
            call.lineage = Lineage::Given(cum.len(), tokscope_core::rebuild::digest::digest(&cum));
        }
        cumulative = cum;
    }
    rollouts.push(rollout("demo-delta", calls));

    // A record from a newer writer: the whole capture is unreadable (shown for triage).
    let mut calls = agent(&tok, "demo-newer-writer", 2, &[0, 3], None, t0 + 1100.0);
    calls[1].overrides.insert("schema_version".into(), json!(6));
    rollouts.push(rollout("demo-newer-writer", calls));

    // A long agent run.
    let steps: Vec<usize> = (0..40).map(|i| i % STEPS.len()).collect();
    rollouts.push(rollout(
        "demo-long",
        agent(&tok, "demo-long", 0, &steps, Some(0), t0 + 1200.0),
    ));

    for rollout in &rollouts {
        rollout.write(&store).expect("write rollout");
    }
    // The harness's rollout rows, next to the token files (found without --rollouts).
    let rows = tokscope_testkit::rows_for_store(&store);
    let lines: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    std::fs::write(store.join("rollouts.jsonl"), lines.join("\n") + "\n").expect("write rows");
    println!("wrote {} rollouts to {}", rollouts.len(), store.display());
}
