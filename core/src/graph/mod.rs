//! The observation graph of one rollout, joined to its token records: lines for the graph
//! pane, the join gaps, and the headless summary.

pub mod text;

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Value, json};

use crate::gaps::{Gap, GapFact, GapKind};
use crate::observe::{CallRef, Compaction, Observations, ObservedCall, ToolCall};
use crate::rebuild::RecordFate;
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
    /// A verifier's own call (a judge): not a policy call, no token record expected.
    Verifier,
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
            match build.chain_of(*node) {
                Some(_) if build.on_main(*node) => CallState::Main,
                Some(_) => CallState::Branch,
                None => CallState::Captured,
            }
        }
        _ => CallState::SetAside,
    }
}

/// What a graph line stands for, as facts; the graph pane words it.
#[derive(Clone, Debug, PartialEq)]
pub enum GraphNode {
    /// An agent invocation (a subagent when it has a parent).
    Invocation {
        /// `invocation_id`.
        id: String,
        /// The agent integration that observed it (the bundle's `source`), when said.
        source: Option<String>,
        /// It has a parent invocation.
        subagent: bool,
        /// Outcome.
        status: String,
        /// The tool call that spawned it.
        spawned_by: Option<String>,
        /// Why it stopped.
        stop_reason: Option<String>,
        /// On a parent cycle (not followed).
        cycle: bool,
    },
    /// A model call an invocation or a verifier made.
    ModelCall {
        /// A verifier's judge call.
        judge: bool,
        /// Which call (`None`: the reference names nothing).
        call: Option<ObservedCall>,
        /// How it joins the token capture.
        state: CallState,
        /// Response status.
        status: Option<String>,
        /// Finish reason.
        finish_reason: Option<String>,
        /// Duration.
        duration_ms: Option<f64>,
        /// Prompt and completion tokens.
        tokens: Option<(i64, i64)>,
    },
    /// A tool call.
    Tool {
        /// `tool_call_id` (what a subagent's `spawned by tool call` names).
        id: String,
        /// Tool name (else its id).
        name: String,
        /// Outcome.
        status: String,
        /// Duration.
        duration_ms: Option<f64>,
        /// Sandbox used.
        sandbox: Option<String>,
        /// On a parent-span cycle.
        cycle: bool,
    },
    /// A context compaction.
    Compaction {
        /// Outcome.
        outcome: String,
        /// Where it happened among the model calls is not known.
        position_unknown: bool,
        /// Tokens before / after.
        tokens: (Option<i64>, Option<i64>),
        /// What triggered it.
        trigger: Option<String>,
        /// The calls that wrote the summary (`None`: a reference naming nothing).
        by: Vec<Option<ObservedCall>>,
        /// The first call after it, when known.
        before: Option<Option<ObservedCall>>,
        /// Its invocation, when the row holds no such invocation.
        unobserved_invocation: Option<String>,
    },
    /// A compaction's summary.
    Summary(String),
    /// A verifier invocation.
    Verifier {
        /// `invocation_id`.
        id: String,
        /// Outcome.
        status: String,
        /// Grading record: (verifier, score, verdict).
        grading: Option<(String, f64, String)>,
    },
    /// A grading operation of a verifier.
    Grading {
        /// Kind.
        kind: String,
        /// Outcome.
        outcome: String,
    },
    /// A sandbox.
    Sandbox {
        /// `sandbox_id`.
        id: Option<String>,
        /// Role.
        role: String,
        /// Outcome.
        outcome: String,
        /// Wall time, peak memory, CPU time.
        usage: (Option<f64>, Option<f64>, Option<f64>),
    },
    /// A record of a kind this reader does not know (kept).
    Unknown {
        /// Its `kind`.
        kind: String,
    },
}

/// One line of the graph pane.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphLine {
    /// Indentation.
    pub depth: usize,
    /// What it stands for.
    pub node: GraphNode,
    /// The token-store call it stands for, when it is a joined model call.
    pub call: Option<String>,
    /// Worth flagging (a cycle, a failure, a call without token record).
    pub problem: bool,
    /// The observation record behind the line, as written.
    pub raw: Option<Value>,
}

struct Builder<'a> {
    obs: &'a Observations,
    analysis: &'a Analysis,
    lines: Vec<GraphLine>,
    tool_cycles: HashSet<String>,
    /// Compactions by (invocation, the model call before them), when both are known.
    compactions_after: HashMap<(String, String), Vec<usize>>,
    /// Compactions drawn so far.
    drawn_compactions: HashSet<usize>,
    /// The calls only verifiers name (computed once).
    verifier_calls: std::collections::BTreeSet<ObservedCall>,
}

impl Builder<'_> {
    fn push(&mut self, depth: usize, node: GraphNode, call: Option<String>, problem: bool) {
        self.lines.push(GraphLine {
            depth,
            node,
            call,
            problem,
            raw: None,
        });
    }

    /// Whether only verifiers name the call `reference` names.
    fn is_verifiers(&self, reference: &CallRef) -> bool {
        self.obs
            .observed(reference)
            .is_some_and(|call| self.verifier_calls.contains(&call))
    }

    /// Attach the record behind the last line.
    fn raw(&mut self, raw: &Value) {
        if let Some(line) = self.lines.last_mut() {
            line.raw = Some(raw.clone());
        }
    }

    fn model_call(&mut self, depth: usize, reference: &CallRef, judge: bool) {
        let resolved = self.obs.resolve(reference);
        let info = self.obs.model_calls.iter().find(|m| match &resolved {
            Some(_) => m.model_call_id == resolved,
            None => {
                reference.response_id.is_some()
                    && m.response_id == reference.response_id
                    && m.model_ref == reference.model_ref
            }
        });
        let state = match resolved.as_deref().map(|c| call_state(self.analysis, c)) {
            Some(CallState::NoTokenRecord) | None if judge && self.is_verifiers(reference) => {
                CallState::Verifier
            }
            Some(state) => state,
            None => CallState::NoTokenRecord,
        };
        let node = GraphNode::ModelCall {
            judge,
            call: self.obs.observed(reference),
            state,
            status: info.and_then(|i| i.status.clone()),
            finish_reason: info.and_then(|i| i.finish_reason.clone()),
            duration_ms: info.and_then(|i| i.duration_ms),
            tokens: info.and_then(|i| i.tokens.0.zip(i.tokens.1)),
        };
        let problem = state == CallState::NoTokenRecord;
        self.push(depth, node, resolved, problem);
        if let Some(info) = info {
            self.raw(&info.raw);
        }
    }

    /// A compaction line (once), with its summary below it.
    fn compaction(&mut self, depth: usize, index: usize, position_unknown: bool) {
        if !self.drawn_compactions.insert(index) {
            return;
        }
        let compaction: &Compaction = &self.obs.compactions[index];
        let invocation_known = compaction
            .invocation_id
            .as_ref()
            .is_some_and(|id| self.obs.invocations.iter().any(|i| &i.id == id));
        let node = GraphNode::Compaction {
            outcome: compaction.outcome.clone(),
            position_unknown,
            tokens: compaction.tokens,
            trigger: compaction.trigger.clone(),
            by: compaction
                .model_calls
                .iter()
                .map(|r| self.obs.observed(r))
                .collect(),
            before: compaction.after.as_ref().map(|r| self.obs.observed(r)),
            unobserved_invocation: (!invocation_known)
                .then(|| compaction.invocation_id.clone().unwrap_or_default()),
        };
        self.push(depth, node, None, compaction.outcome == "failed");
        self.raw(&compaction.raw);
        if let Some(summary) = compaction.summary.as_ref().filter(|s| !s.is_empty()) {
            self.push(depth + 1, GraphNode::Summary(summary.clone()), None, false);
            self.raw(&compaction.raw);
        }
    }

    fn tool(&mut self, depth: usize, tool: &ToolCall) {
        let cycle = tool
            .span_id
            .as_ref()
            .is_some_and(|s| self.tool_cycles.contains(s));
        let node = GraphNode::Tool {
            id: tool.id.clone(),
            name: tool.name.clone().unwrap_or_else(|| tool.id.clone()),
            status: tool.status.clone(),
            duration_ms: tool.duration_ms,
            sandbox: tool.sandbox_id.clone(),
            cycle,
        };
        let problem = cycle || !matches!(tool.status.as_str(), "completed" | "unknown");
        self.push(depth, node, None, problem);
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
            let cycle = cycles.contains(&inv.id);
            let node = GraphNode::Invocation {
                id: inv.id.clone(),
                source: obs.integration.clone(),
                subagent: inv.parent.is_some(),
                status: inv.status.clone(),
                spawned_by: inv.spawned_by_tool_call.clone(),
                stop_reason: inv.stop_reason.clone(),
                cycle,
            };
            self.push(depth, node, None, cycle || inv.status == "failed");
            self.raw(&inv.raw);
            // Model calls in order, each followed by its tools and any compaction after it.
            let tools: Vec<&ToolCall> = obs
                .tool_calls
                .iter()
                .filter(|t| t.invocation_id.as_deref() == Some(inv.id.as_str()))
                .collect();
            let mut placed_tools = HashSet::new();
            for reference in &inv.model_calls {
                self.model_call(depth + 1, reference, false);
                let resolved = obs.resolve(reference);
                for tool in tools
                    .iter()
                    .filter(|t| t.model_call_id.is_some() && t.model_call_id == resolved)
                {
                    self.tool_tree(depth + 2, tool, &tools, &mut placed_tools);
                }
                let key = (inv.id.clone(), resolved.clone().unwrap_or_default());
                for index in self.compactions_after.remove(&key).unwrap_or_default() {
                    self.compaction(depth + 1, index, false);
                }
            }
            // Compactions whose place among the calls is unknown: before_model_call null (the
            // producer could not tell), unresolved, or an invocation without model calls.
            for (index, compaction) in obs.compactions.iter().enumerate() {
                if compaction.invocation_id.as_deref() == Some(inv.id.as_str()) {
                    self.compaction(depth + 1, index, true);
                }
            }
            for tool in &tools {
                if tool.parent_span_id.is_none()
                    || !tools.iter().any(|t| t.span_id == tool.parent_span_id)
                {
                    self.tool_tree(depth + 1, tool, &tools, &mut placed_tools);
                }
            }
            // Tools on a span cycle have no root above them: drawn too, flagged.
            for tool in &tools {
                self.tool_tree(depth + 1, tool, &tools, &mut placed_tools);
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
        placed: &mut HashSet<usize>,
    ) {
        let mut stack = vec![(root, depth)];
        while let Some((tool, depth)) = stack.pop() {
            // By identity, not id: a harness may repeat a tool call id.
            if !placed.insert(std::ptr::from_ref(tool) as usize) {
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
        compactions_after: HashMap::new(),
        drawn_compactions: HashSet::new(),
        verifier_calls: obs.verifier_calls(),
    };
    for (index, compaction) in obs.compactions.iter().enumerate() {
        let before = compaction.before.as_ref().and_then(|b| obs.resolve(b));
        if let (Some(invocation), Some(before)) = (&compaction.invocation_id, before) {
            builder
                .compactions_after
                .entry((invocation.clone(), before))
                .or_default()
                .push(index);
        }
    }
    builder.invocations();
    // Tools of an invocation the row does not hold: still shown.
    let invocation_ids: HashSet<&str> = obs.invocations.iter().map(|i| i.id.as_str()).collect();
    let orphans: Vec<&ToolCall> = obs
        .tool_calls
        .iter()
        .filter(|t| {
            t.invocation_id
                .as_deref()
                .is_none_or(|id| !invocation_ids.contains(id))
        })
        .collect();
    let mut placed = HashSet::new();
    for tool in &orphans {
        builder.tool_tree(0, tool, &orphans, &mut placed);
    }
    // Compactions of an invocation the row does not hold: still shown.
    for index in 0..obs.compactions.len() {
        builder.compaction(0, index, true);
    }
    for verifier in &obs.verifiers {
        let node = GraphNode::Verifier {
            id: verifier.id.clone(),
            status: verifier.status.clone(),
            grading: verifier.grading.clone(),
        };
        builder.push(0, node, None, verifier.status == "failed");
        builder.raw(&verifier.raw);
        for reference in &verifier.model_calls {
            builder.model_call(1, reference, true);
        }
        for (kind, outcome) in &verifier.operations {
            let node = GraphNode::Grading {
                kind: kind.clone(),
                outcome: outcome.clone(),
            };
            builder.push(1, node, None, outcome == "failed");
        }
    }
    for sandbox in &obs.sandboxes {
        let node = GraphNode::Sandbox {
            id: sandbox.id.clone(),
            role: sandbox.role.clone(),
            outcome: sandbox.outcome.clone(),
            usage: sandbox.usage,
        };
        let problem = !matches!(sandbox.outcome.as_str(), "completed" | "unknown");
        builder.push(0, node, None, problem);
        builder.raw(&sandbox.raw);
    }
    for (kind, raw) in &obs.unknown {
        let node = GraphNode::Unknown { kind: kind.clone() };
        builder.push(0, node, None, false);
        builder.raw(raw);
    }
    builder.lines
}

/// Every gap of a rollout: capture gaps, then observation and join gaps when its row is known.
pub fn rollout_gaps(analysis: &Analysis) -> Vec<Gap> {
    let mut all = crate::gaps::capture_gaps(analysis);
    if let Some(observations) = &analysis.options.observations {
        all.extend(gaps(observations, analysis));
    }
    all
}

/// Observation gaps and join gaps of a rollout.
pub fn gaps(obs: &Observations, analysis: &Analysis) -> Vec<Gap> {
    if obs.missing_row {
        return vec![Gap::general(GapFact::NoRow)];
    }
    let mut gaps: Vec<Gap> = obs
        .gaps
        .iter()
        .map(|gap| Gap::general(GapFact::Observation(gap.clone())))
        .collect();
    gaps.extend(
        obs.problems
            .iter()
            .map(|problem| Gap::general(GapFact::UnreadableRecord(problem.clone()))),
    );
    gaps.extend(
        obs.replaced
            .iter()
            .map(|earlier| Gap::general(GapFact::ReplacedRow(earlier.clone()))),
    );
    let referenced = obs.referenced_calls();
    let recorded = recorded_ids(analysis);
    // A judge's calls are the verifier's, not the policy's: no token record is expected.
    let verifiers = obs.verifier_calls();
    for call in obs.observed_calls() {
        match call {
            ObservedCall::Id(id) if recorded.contains(id.as_str()) => {}
            call if verifiers.contains(&call) => {}
            ObservedCall::Id(id) => gaps.push(Gap::about(id, GapFact::NoTokenRecord)),
            response @ ObservedCall::Response { .. } => {
                gaps.push(Gap::general(GapFact::UnresolvedReference(response)))
            }
            ObservedCall::Unidentified(index) => {
                gaps.push(Gap::general(GapFact::UnidentifiedCall(index)))
            }
        }
    }
    for reference in obs.ambiguous_references() {
        gaps.push(Gap::general(GapFact::AmbiguousReference(reference)));
    }
    for record in analysis.capture.records.iter() {
        if !referenced.contains(&record.model_call_id) {
            gaps.push(Gap::about(
                record.model_call_id.clone(),
                GapFact::UnownedRecord,
            ));
        }
    }
    for id in obs.invocation_cycles() {
        gaps.push(Gap::general(GapFact::InvocationCycle(id)));
    }
    for span in obs.tool_cycles() {
        gaps.push(Gap::general(GapFact::ToolSpanCycle(span)));
    }
    gaps
}

/// The call ids that have a token record.
fn recorded_ids(analysis: &Analysis) -> HashSet<&str> {
    analysis
        .capture
        .records
        .iter()
        .map(|r| r.model_call_id.as_str())
        .collect()
}

/// The headless summary added to a report.
pub fn summary(obs: &Observations, analysis: &Analysis) -> Value {
    let recorded = recorded_ids(analysis);
    let observed = obs.observed_calls();
    let joined = observed
        .iter()
        .filter(|c| matches!(c, ObservedCall::Id(id) if recorded.contains(id.as_str())))
        .count();
    let mut tools: BTreeMap<&str, usize> = BTreeMap::new();
    for tool in &obs.tool_calls {
        *tools.entry(tool.status.as_str()).or_default() += 1;
    }
    let mut codes: BTreeMap<&str, usize> = BTreeMap::new();
    for gap in &obs.gaps {
        *codes.entry(gap.code.as_str()).or_default() += 1;
    }
    json!({
        "source": obs.source.as_ref().map(ToString::to_string),
        "replaced_rows": obs.replaced.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "invocations": obs.invocations.len(),
        "model_calls": {"observed": observed.len(), "joined": joined, "unjoined": observed.len() - joined},
        "tool_calls": tools,
        "compactions": obs.compactions.len(),
        "verifier_invocations": obs.verifiers.len(),
        "sandboxes": obs.sandboxes.len(),
        "gaps": codes,
        "unreadable_records": obs.problems.len(),
        "unknown_records": obs.unknown.len(),
        "failure_class": obs.failure_class,
        "join_gaps": gaps(obs, analysis).iter().filter(|g| g.kind() == GapKind::Join).count(),
    })
}
