//! What the graph's lines say, as plain text (the pane styles and sanitizes it; search and
//! yank read it).

use super::{CallState, GraphLine, GraphNode};
use crate::observe::ObservedCall;

/// How a call's join to the token capture is worded.
pub fn call_state(state: CallState) -> &'static str {
    match state {
        CallState::NoTokenRecord => "no token record",
        CallState::SetAside => "set aside",
        CallState::Quarantined => "quarantined",
        CallState::Main => "in main",
        CallState::Branch => "in a branch",
        CallState::Captured => "captured",
        CallState::Verifier => "the verifier's (not a policy call)",
    }
}

fn ms(value: Option<f64>) -> String {
    value.map_or(String::new(), |v| format!(" {v:.0}ms"))
}

fn call_name(call: &Option<ObservedCall>) -> String {
    call.as_ref()
        .map_or_else(|| "unidentified call".into(), ToString::to_string)
}

/// Text on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

/// A graph line as the pane shows it, indented (unsanitized: the pane sanitizes).
pub fn line_text(line: &GraphLine) -> String {
    format!(
        "{}{}",
        "  ".repeat(line.depth.min(10)),
        describe(&line.node)
    )
}

/// What a graph node says.
pub fn describe(node: &GraphNode) -> String {
    match node {
        GraphNode::Invocation {
            id,
            source,
            subagent,
            status,
            spawned_by,
            stop_reason,
            cycle,
        } => {
            let kind = if *subagent { "subagent" } else { "agent" };
            // The integration that observed it, and a status the row did not give said so.
            let status = match status.as_str() {
                "unknown" => "status not recorded",
                other => other,
            };
            let mut text = match source {
                Some(source) => format!("▸ {kind} {id} ({source}, {status})"),
                None => format!("▸ {kind} {id} ({status})"),
            };
            if let Some(tool) = spawned_by {
                text.push_str(&format!(" spawned by tool call {tool}"));
            }
            if let Some(stop) = stop_reason {
                text.push_str(&format!(" stop={stop}"));
            }
            if *cycle {
                text.push_str(" ⟲ parent cycle");
            }
            text
        }
        GraphNode::ModelCall {
            judge,
            call,
            state,
            status,
            finish_reason,
            duration_ms,
            tokens,
        } => {
            let role = if *judge { "judge " } else { "" };
            let mut text = format!("● {role}{} [{}]", call_name(call), call_state(*state));
            if let Some(status) = status {
                text.push_str(&format!(" {status}"));
            }
            if let Some(finish) = finish_reason {
                text.push_str(&format!(" finish={finish}"));
            }
            text.push_str(&ms(*duration_ms));
            if let Some((prompt, completion)) = tokens {
                text.push_str(&format!(" tokens {prompt}+{completion}"));
            }
            text
        }
        GraphNode::Tool {
            id,
            name,
            status,
            duration_ms,
            sandbox,
            cycle,
        } => {
            // The call's id, so `spawned by tool call ID` on a subagent can be matched.
            let named = if name == id {
                format!("⚒ tool {name}")
            } else {
                format!("⚒ tool {name} [{id}]")
            };
            let mut text = format!("{named} ({status}{})", ms(*duration_ms));
            if let Some(sandbox) = sandbox {
                text.push_str(&format!(" sandbox {sandbox}"));
            }
            if *cycle {
                text.push_str(" ⟲ parent cycle");
            }
            text
        }
        GraphNode::Compaction {
            outcome,
            position_unknown,
            tokens,
            trigger,
            by,
            before,
            unobserved_invocation,
        } => {
            let count = |t: Option<i64>| t.map_or("?".to_owned(), |t| t.to_string());
            let position = if *position_unknown {
                ", position unknown"
            } else {
                ""
            };
            let mut text = format!(
                "⇣ compaction ({outcome}{position}) tokens {}→{}",
                count(tokens.0),
                count(tokens.1)
            );
            if let Some(trigger) = trigger {
                text.push_str(&format!(" trigger={trigger}"));
            }
            if !by.is_empty() {
                let calls: Vec<String> = by.iter().map(call_name).collect();
                text.push_str(&format!(" by {}", calls.join(", ")));
            }
            if let Some(after) = before {
                text.push_str(&format!(" before {}", call_name(after)));
            }
            if let Some(invocation) = unobserved_invocation {
                text.push_str(&format!(" · in unobserved invocation {invocation}"));
            }
            text
        }
        GraphNode::Summary(summary) => format!("“{}”", one_line(summary, 160)),
        GraphNode::Verifier {
            id,
            status,
            grading,
        } => {
            let mut text = format!("✓ verifier {id} ({status})");
            if let Some((name, score, verdict)) = grading {
                text.push_str(&format!(" {name}: score {score} {verdict}"));
            }
            text
        }
        GraphNode::Grading { kind, outcome } => format!("∑ grading {kind} ({outcome})"),
        GraphNode::Sandbox {
            id,
            role,
            outcome,
            usage: (wall, memory, cpu),
        } => format!(
            "□ sandbox {} {role} ({outcome}){}{}{}",
            id.as_deref().unwrap_or("?"),
            wall.map_or(String::new(), |w| format!(" wall {w:.1}s")),
            memory.map_or(String::new(), |m| format!(" peak {m:.0}MiB")),
            cpu.map_or(String::new(), |c| format!(" cpu {c:.1}s")),
        ),
        GraphNode::Unknown { kind } => format!("? record of unknown kind {kind:?} (kept)"),
    }
}
