//! The observation graph of one rollout, joined to its token records: lines for the graph
//! pane, the join gaps, and the headless summary.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::{CallRef, Observations, ToolCall};
use crate::build::RecordFate;
use crate::gaps::{Gap, GapKind};
use crate::verdict::Analysis;

/// How an observed model call joins the token capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallState {
    /// No token record has its id.
    NoTokenRecord,
    /// A record exists but the build set it aside (empty, duplicate, broken delta).
    SetAside,
    /// Quarantined retry sibling.
    Quarantined,
    /// On the delivered chain.
    Main,
    /// On a chain that is not delivered.
    Branch,
    /// Placed, but on no chain (under a quarantined call) or the build failed.
    Captured,
}

impl CallState {
    /// Short label.
    pub fn label(self) -> &'static str {
        match self {
            CallState::NoTokenRecord => "no token record",
            CallState::SetAside => "set aside",
            CallState::Quarantined => "quarantined",
            CallState::Main => "in main",
            CallState::Branch => "in a branch",
            CallState::Captured => "captured",
        }
    }
}

/// The state of model call `call` in an analysis.
pub fn call_state(analysis: &Analysis, call: &str) -> CallState {
    let records = &analysis.capture.records;
    let Some(index) = records.iter().position(|r| r.model_call_id == call) else {
        return CallState::NoTokenRecord;
    };
    let Some(build) = &analysis.build else {
        return CallState::Captured;
    };
    match &build.fates[index] {
        RecordFate::Placed(node) => {
            if build.nodes[*node].quarantined {
                return CallState::Quarantined;
            }
            match build
                .chains
                .iter()
                .find(|c| c.links.iter().any(|l| l.node == *node))
            {
                Some(chain) if chain.chain_id == "main" => CallState::Main,
                Some(_) => CallState::Branch,
                None => CallState::Captured,
            }
        }
        _ => CallState::SetAside,
    }
}

/// One line of the graph pane.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphLine {
    /// Indentation.
    pub depth: usize,
    /// What it says.
    pub text: String,
    /// The token-store call it stands for, when it is a joined model call.
    pub call: Option<String>,
    /// Worth flagging (a cycle, a failure, a call without token record).
    pub problem: bool,
    /// The observation record behind the line, as written.
    pub raw: Option<Value>,
}

fn ms(value: Option<f64>) -> String {
    value.map_or(String::new(), |v| format!(" {:.0}ms", v))
}

struct Builder<'a> {
    obs: &'a Observations,
    analysis: &'a Analysis,
    lines: Vec<GraphLine>,
    tool_cycles: HashSet<String>,
}

impl Builder<'_> {
    fn push(&mut self, depth: usize, text: String, call: Option<String>, problem: bool) {
        self.lines.push(GraphLine {
            depth,
            text,
            call,
            problem,
            raw: None,
        });
    }

    /// Attach the record behind the last line.
    fn raw(&mut self, raw: &Value) {
        if let Some(line) = self.lines.last_mut() {
            line.raw = Some(raw.clone());
        }
    }

    fn model_call(&mut self, depth: usize, reference: &CallRef, role: &str) {
        let resolved = self.obs.resolve(reference);
        let info = self.obs.model_calls.iter().find(|m| {
            (m.model_call_id.is_some() && m.model_call_id == resolved)
                || (reference.response_id.is_some() && m.response_id == reference.response_id)
        });
        let name = resolved
            .clone()
            .or_else(|| {
                reference
                    .response_id
                    .as_ref()
                    .map(|r| format!("response {r}"))
            })
            .unwrap_or_else(|| "unidentified call".into());
        let state = resolved
            .as_deref()
            .map_or(CallState::NoTokenRecord, |c| call_state(self.analysis, c));
        let mut text = format!("● {role}{name} [{}]", state.label());
        if let Some(info) = info {
            if let Some(status) = &info.status {
                text.push_str(&format!(" {status}"));
            }
            if let Some(finish) = &info.finish_reason {
                text.push_str(&format!(" finish={finish}"));
            }
            text.push_str(&ms(info.duration_ms));
            if let (Some(p), Some(c)) = info.tokens {
                text.push_str(&format!(" tokens {p}+{c}"));
            }
        }
        let problem = state == CallState::NoTokenRecord;
        self.push(depth, text, resolved, problem);
        if let Some(info) = info {
            self.raw(&info.raw);
        }
    }

    fn tool(&mut self, depth: usize, tool: &ToolCall) {
        let cycle = tool
            .span_id
            .as_ref()
            .is_some_and(|s| self.tool_cycles.contains(s));
        let mut text = format!(
            "⚒ tool {} ({}{})",
            tool.name.as_deref().unwrap_or(&tool.id),
            tool.status,
            ms(tool.duration_ms)
        );
        if let Some(sandbox) = &tool.sandbox_id {
            text.push_str(&format!(" sandbox {sandbox}"));
        }
        if cycle {
            text.push_str(" ⟲ parent cycle");
        }
        let problem = cycle || !matches!(tool.status.as_str(), "completed" | "unknown");
        self.push(depth, text, None, problem);
        self.raw(&tool.raw);
    }

    /// One invocation and everything under it (iterative over subagents).
    fn invocations(&mut self) {
        let obs = self.obs;
        let cycles = obs.invocation_cycles();
        let ids: HashSet<&str> = obs.invocations.iter().map(|i| i.id.as_str()).collect();
        let roots: Vec<usize> = (0..obs.invocations.len())
            .filter(|&i| {
                let inv = &obs.invocations[i];
                inv.parent.as_deref().is_none_or(|p| !ids.contains(p)) || cycles.contains(&inv.id)
            })
            .collect();
        let mut visited = HashSet::new();
        let mut stack: Vec<(usize, usize)> = roots.into_iter().rev().map(|i| (i, 0)).collect();
        while let Some((index, depth)) = stack.pop() {
            if !visited.insert(index) {
                continue;
            }
            let inv = &obs.invocations[index];
            let mut text = format!(
                "▸ {} {} ({})",
                if inv.parent.is_some() {
                    "subagent"
                } else {
                    "agent"
                },
                inv.id,
                inv.status
            );
            if let Some(tool) = &inv.spawned_by_tool_call {
                text.push_str(&format!(" spawned by tool call {tool}"));
            }
            if let Some(stop) = &inv.stop_reason {
                text.push_str(&format!(" stop={stop}"));
            }
            let cycle = cycles.contains(&inv.id);
            if cycle {
                text.push_str(" ⟲ parent cycle");
            }
            self.push(depth, text, None, cycle || inv.status == "failed");
            self.raw(&inv.raw);
            // Model calls in order, each followed by its tools and any compaction after it.
            let tools: Vec<&ToolCall> = obs
                .tool_calls
                .iter()
                .filter(|t| t.invocation_id.as_deref() == Some(inv.id.as_str()))
                .collect();
            let mut placed_tools = HashSet::new();
            for reference in &inv.model_calls {
                self.model_call(depth + 1, reference, "");
                let resolved = obs.resolve(reference);
                for tool in tools
                    .iter()
                    .filter(|t| t.model_call_id.is_some() && t.model_call_id == resolved)
                {
                    self.tool_tree(depth + 2, tool, &tools, &mut placed_tools);
                }
                for compaction in obs.compactions.iter().filter(|c| {
                    c.invocation_id.as_deref() == Some(inv.id.as_str())
                        && c.before.as_ref().and_then(|b| obs.resolve(b)).is_some()
                        && c.before.as_ref().and_then(|b| obs.resolve(b)) == resolved
                }) {
                    let after = compaction
                        .after
                        .as_ref()
                        .and_then(|a| obs.resolve(a))
                        .unwrap_or_default();
                    let (before_tokens, after_tokens) = compaction.tokens;
                    self.push(
                        depth + 1,
                        format!(
                            "⇣ compaction ({}) tokens {}→{}{} before {after}",
                            compaction.outcome,
                            before_tokens.map_or("?".into(), |t| t.to_string()),
                            after_tokens.map_or("?".into(), |t| t.to_string()),
                            compaction
                                .trigger
                                .as_ref()
                                .map_or(String::new(), |t| format!(" trigger={t}")),
                        ),
                        None,
                        compaction.outcome == "failed",
                    );
                    self.raw(&compaction.raw);
                }
            }
            for tool in &tools {
                if tool.parent_span_id.is_none()
                    || !tools.iter().any(|t| t.span_id == tool.parent_span_id)
                {
                    self.tool_tree(depth + 1, tool, &tools, &mut placed_tools);
                }
            }
            // Subagents next (pushed in reverse so they come out in order).
            let children: Vec<usize> = (0..obs.invocations.len())
                .filter(|&c| {
                    obs.invocations[c].parent.as_deref() == Some(inv.id.as_str())
                        && !cycles.contains(&obs.invocations[c].id)
                })
                .collect();
            for child in children.into_iter().rev() {
                stack.push((child, depth + 1));
            }
        }
    }

    /// A tool and the tools nested under it by `parent_span_id` (iterative; cycles stop).
    fn tool_tree(
        &mut self,
        depth: usize,
        root: &ToolCall,
        tools: &[&ToolCall],
        placed: &mut HashSet<String>,
    ) {
        let mut stack = vec![(root, depth)];
        while let Some((tool, depth)) = stack.pop() {
            if !placed.insert(tool.id.clone()) {
                continue;
            }
            self.tool(depth, tool);
            if let Some(span) = &tool.span_id {
                for child in tools
                    .iter()
                    .rev()
                    .filter(|t| t.parent_span_id.as_ref() == Some(span))
                {
                    stack.push((child, depth + 1));
                }
            }
        }
    }
}

/// The graph pane's lines for a rollout.
pub fn lines(obs: &Observations, analysis: &Analysis) -> Vec<GraphLine> {
    let mut builder = Builder {
        obs,
        analysis,
        lines: Vec::new(),
        tool_cycles: obs.tool_cycles(),
    };
    builder.invocations();
    for verifier in &obs.verifiers {
        let mut text = format!("✓ verifier {} ({})", verifier.id, verifier.status);
        if let Some((name, score, verdict)) = &verifier.grading {
            text.push_str(&format!(" {name}: score {score} {verdict}"));
        }
        builder.push(0, text, None, verifier.status == "failed");
        builder.raw(&verifier.raw);
        for reference in &verifier.model_calls {
            builder.model_call(1, reference, "judge ");
        }
        for (kind, outcome) in &verifier.operations {
            builder.push(
                1,
                format!("∑ grading {kind} ({outcome})"),
                None,
                outcome == "failed",
            );
        }
    }
    for sandbox in &obs.sandboxes {
        let (wall, memory, cpu) = sandbox.usage;
        builder.push(
            0,
            format!(
                "□ sandbox {} {} ({}){}{}{}",
                sandbox.id.as_deref().unwrap_or("?"),
                sandbox.role,
                sandbox.outcome,
                wall.map_or(String::new(), |w| format!(" wall {w:.1}s")),
                memory.map_or(String::new(), |m| format!(" peak {m:.0}MiB")),
                cpu.map_or(String::new(), |c| format!(" cpu {c:.1}s")),
            ),
            None,
            !matches!(sandbox.outcome.as_str(), "completed" | "unknown"),
        );
        builder.raw(&sandbox.raw);
    }
    for (kind, raw) in &obs.unknown {
        builder.push(
            0,
            format!("? record of unknown kind {kind:?} (kept)"),
            None,
            false,
        );
        builder.raw(raw);
    }
    builder.lines
}

/// Observation gaps and join gaps of a rollout.
pub fn gaps(obs: &Observations, analysis: &Analysis) -> Vec<Gap> {
    let mut gaps = Vec::new();
    if obs.missing_row {
        gaps.push(Gap {
            kind: GapKind::Join,
            call: None,
            detail: "no rollout row names this rollout".into(),
        });
        return gaps;
    }
    let mut push =
        |kind, call: Option<String>, detail: String| gaps.push(Gap { kind, call, detail });
    for gap in &obs.gaps {
        let mut detail = gap.code.clone();
        if let Some(d) = &gap.detail {
            detail.push_str(&format!(": {d}"));
        }
        for (label, value) in [
            ("invocation", &gap.invocation_id),
            ("span", &gap.span_id),
            ("agent", &gap.agent_instance),
        ] {
            if let Some(value) = value {
                detail.push_str(&format!(" [{label} {value}]"));
            }
        }
        push(GapKind::Observation, None, detail);
    }
    for problem in &obs.problems {
        push(
            GapKind::Observation,
            None,
            format!("unreadable record: {problem}"),
        );
    }
    let referenced = obs.referenced_calls();
    let mut observed: Vec<String> = referenced.iter().cloned().collect();
    observed.extend(
        obs.model_calls
            .iter()
            .filter_map(|m| m.model_call_id.clone()),
    );
    observed.sort();
    observed.dedup();
    for call in &observed {
        if call_state(analysis, call) == CallState::NoTokenRecord {
            push(
                GapKind::Join,
                Some(call.clone()),
                "observed model call with no token record".into(),
            );
        }
    }
    for record in analysis.capture.records.iter() {
        if !referenced.contains(&record.model_call_id) {
            push(
                GapKind::Join,
                Some(record.model_call_id.clone()),
                "token record that no invocation owns".into(),
            );
        }
    }
    for id in obs.invocation_cycles() {
        push(
            GapKind::Join,
            None,
            format!("invocation {id} is on a parent cycle"),
        );
    }
    for span in obs.tool_cycles() {
        push(
            GapKind::Join,
            None,
            format!("tool span {span} is on a parent-span cycle"),
        );
    }
    if let Some(Err(response)) = obs.declared_terminal() {
        push(
            GapKind::Join,
            None,
            format!("declared final response {response} matches no model call"),
        );
    }
    gaps
}

/// The headless summary added to a report.
pub fn summary(obs: &Observations, analysis: &Analysis) -> Value {
    let referenced = obs.referenced_calls();
    let joined = referenced
        .iter()
        .filter(|c| call_state(analysis, c) != CallState::NoTokenRecord)
        .count();
    let mut tools: HashMap<&str, usize> = HashMap::new();
    for tool in &obs.tool_calls {
        *tools.entry(tool.status.as_str()).or_default() += 1;
    }
    let mut codes: HashMap<&str, usize> = HashMap::new();
    for gap in &obs.gaps {
        *codes.entry(gap.code.as_str()).or_default() += 1;
    }
    json!({
        "source": obs.source.as_ref().map(|s| format!("{}:{}", s.file.display(), s.line)),
        "invocations": obs.invocations.len(),
        "model_calls": {"observed": referenced.len(), "joined": joined, "unjoined": referenced.len() - joined},
        "tool_calls": tools,
        "compactions": obs.compactions.len(),
        "verifier_invocations": obs.verifiers.len(),
        "sandboxes": obs.sandboxes.len(),
        "gaps": codes,
        "join_gaps": gaps(obs, analysis).iter().filter(|g| g.kind == GapKind::Join).count(),
        "declared_terminal": match obs.declared_terminal() {
            None => Value::Null,
            Some(Ok(call)) => json!(call),
            Some(Err(_)) => json!(false),
        },
    })
}
