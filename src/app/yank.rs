//! Yank: copy what is selected to the clipboard through the terminal (OSC 52, so it works
//! over SSH without a clipboard daemon). The app only decides the text; the terminal loop
//! sends it ([`App::take_clipboard`], then crossterm's OSC 52 command in `term`).

use super::pane::Items;
use super::{App, Notice};

/// Larger payloads are refused: terminals drop or truncate them.
pub const YANK_LIMIT: usize = 1 << 20;

impl App {
    /// The text yanked and not sent yet (the terminal loop sends it).
    pub fn take_clipboard(&mut self) -> Option<String> {
        self.clipboard.take()
    }

    /// Copy what the focused pane has selected: the rollout id, the full call id, the
    /// marked tokens (or the call's tokens under the cursor) as ids or, with `as_text`,
    /// decoded; the selected record as JSON in the inspector; the observation record in
    /// the graph.
    pub(super) fn yank(&mut self, as_text: bool) {
        let payload = match self.focus.spec().items {
            Items::Rollouts => self
                .list
                .selected_rollout()
                .map(|i| ("rollout id", self.rollouts[i].rollout_id().to_owned())),
            Items::Tree => self.selected_call_id().map(|id| ("call id", id)),
            Items::Tokens => self.yank_tokens(as_text),
            Items::Text => self
                .selected_record_json()
                .map(|json| ("record JSON", json)),
            Items::Rows(rows) => self
                .view
                .as_ref()
                .and_then(|view| (rows.yank)(view, (rows.list)(view).selected(), as_text)),
        };
        self.message = Some(match payload {
            None => Notice::NothingToYank,
            Some((_, text)) if text.len() > YANK_LIMIT => Notice::YankTooLarge(text.len()),
            Some((what, text)) => {
                // Nothing that could drive the terminal it is pasted into.
                let text = tokscope_core::text::clipboard_safe(&text).into_owned();
                let notice = Notice::Yanked {
                    what,
                    chars: text.chars().count(),
                    start: text.chars().take(48).collect(),
                };
                self.clipboard = Some(text);
                notice
            }
        });
    }

    /// The full id of the call selected in the tree.
    fn selected_call_id(&self) -> Option<String> {
        let record = self.selected_record()?;
        Some(self.shown()?.capture.records[record].model_call_id.clone())
    }

    fn yank_tokens(&self, as_text: bool) -> Option<(&'static str, String)> {
        let view = self.view.as_ref()?;
        let provenance = view.tokens.provenance.as_ref()?;
        let range = view.tokens.marked().or_else(|| {
            let segment = provenance.segment_at(view.tokens.cursor)?;
            Some(segment.range.0..=segment.range.1.saturating_sub(1))
        })?;
        let ids = provenance
            .tokens
            .values_range(*range.start(), range.end() + 1);
        match (&self.detok, as_text) {
            (Some(detok), true) => Some(("tokens as text", detok.decode(&ids))),
            (None, true) => None,
            (_, false) => Some((
                "token ids",
                ids.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" "),
            )),
        }
    }

    /// The selected record as JSON, as the reader understood it.
    fn selected_record_json(&self) -> Option<String> {
        let r = &self.shown()?.capture.records[self.selected_record()?];
        Some(record_json(r).to_string())
    }
}

/// A record as JSON, as the reader understood it: ids with their exact values (a negative
/// id as written, in the prompt and the generation alike).
fn record_json(r: &tokscope_core::store::TokenRecord) -> serde_json::Value {
    serde_json::json!({
            "schema_version": r.schema_version,
            "rollout_id": r.rollout_id,
            "model_call_id": r.model_call_id,
            "model": r.model,
            "created_at": r.created_at,
            "parent_resolution": r.parent_resolution.map(|p| p.as_str()),
            "parent_call_id": r.parent_call_id,
            "parent_resolution_reason": r.parent_resolution_reason,
            "prompt_is_delta": r.prompt_is_delta,
            "prompt_token_ids": &r.prompt_token_ids,
            "generation_token_ids": tokscope_core::store::TokenSeq::from_ids(
                r.generation_token_ids.clone(),
                r.negative_ids
            ),
            "generation_log_probs": &r.generation_log_probs[..],
            "cum_len": r.cum_len,
            "digest": r.digest,
            "prefix_requested": r.prefix_requested,
            "prefix_supplied": r.prefix_supplied,
            "continuation_fingerprint": r.continuation_fingerprint,
            "continuation_context_len": r.continuation_context_len,
            "continuation_context_digest": r.continuation_context_digest,
            "fingerprint_version": r.fingerprint_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_yanks_its_negative_ids_as_written() {
        let line = r#"{"rollout_id":"r","model_call_id":"c","prompt_token_ids":[-1,2],"generation_token_ids":[-3],"generation_log_probs":[-0.5]}"#;
        let record = tokscope_core::store::TokenRecord::parse(line.as_bytes()).unwrap();
        let json = record_json(&record);
        assert_eq!(json["prompt_token_ids"], serde_json::json!([-1, 2]));
        assert_eq!(json["generation_token_ids"], serde_json::json!([-3]));
    }
}
