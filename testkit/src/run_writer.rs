//! The reference writer's lifecycle, step by step (`store.py`, `delivery.py`), for the tests
//! and benchmarks that follow a store as a run writes it.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::{Call, Rng, linear_rollout};

/// A store driven through the reference writer's lifecycle, step by step (`store.py`,
/// `delivery.py`): stale ids cleared before dispatch (only the lock stays), each call's intent
/// then its record, the freeze when a rollout finishes, and the retirement of what delivers
/// (payload deleted, frozen tombstone kept); a masked rollout keeps its evidence.
#[derive(Clone, Debug)]
pub struct RunWriter {
    /// The store directory (created on the first write, as the writer does).
    pub dir: std::path::PathBuf,
}

/// How a simulated training run goes.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// Rollout ids are `{prefix}{n}`.
    pub prefix: String,
    /// Rollouts written.
    pub rollouts: usize,
    /// Every `masked_every`-th rollout (counting from 1) loses a call: frozen masked.
    pub masked_every: Option<usize>,
    /// Calls a rollout.
    pub calls: usize,
    /// Delivered rollouts are retired (else they stay frozen).
    pub retire: bool,
    /// Pause between rollouts.
    pub pace: std::time::Duration,
}

/// The reference's line digest: SHA-256 of the line's bytes (without its newline), in hex.
pub fn line_digest(line: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(line)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The call id a record line names at its top level (`None` for a line that is not a JSON
/// object naming one).
fn line_call_id(line: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        model_call_id: String,
    }
    serde_json::from_slice::<Named>(line)
        .ok()
        .map(|named| named.model_call_id)
}

/// Python's `bytes.strip()`: ASCII whitespace, vertical tab and form feed included.
fn py_strip(bytes: &[u8]) -> &[u8] {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let start = bytes.iter().position(|b| !space(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !space(b))
        .map_or(start, |at| at + 1);
    &bytes[start..end]
}

fn invalid(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

/// The state's version grown by `by` (every change grows it).
fn bump_version(state: &mut Value, by: u64) {
    state["version"] = json!(state["version"].as_u64().unwrap_or(0) + by);
}

/// A state's keys sorted at every level, as the reference writes it (`OPT_SORT_KEYS`).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|key| (key.clone(), sorted(&map[key])))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

impl RunWriter {
    /// A writer for the store at `dir`.
    pub fn new(dir: &Path) -> RunWriter {
        RunWriter {
            dir: dir.to_path_buf(),
        }
    }

    fn path(&self, id: &str, suffix: &str) -> std::path::PathBuf {
        self.dir.join(format!("{id}{suffix}"))
    }

    fn lock(&self, id: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(id, ".tokens.lock"))
            .map(drop)
    }

    fn state(&self, id: &str) -> Value {
        std::fs::read(self.path(id, ".tokens.state.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_else(|| {
                json!({"entry_digests": {}, "frozen": false, "incomplete": false,
                       "indexed_size": 0, "retired": false, "snapshot_id": "", "version": 0})
            })
    }

    /// Written aside and renamed over, as the writer replaces its state (keys sorted).
    fn write_state(&self, id: &str, state: &Value) -> std::io::Result<()> {
        let aside = self.dir.join(format!(".tokens-state-{id}"));
        std::fs::write(&aside, format!("{}\n", sorted(state)))?;
        std::fs::rename(aside, self.path(id, ".tokens.state.json"))
    }

    fn append_line(&self, path: &Path, line: &str) -> std::io::Result<u64> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        // One write, as the reference's buffered append makes it: a reader never sees the
        // line without its newline unless the write itself is cut short.
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        file.write_all(&bytes)?;
        file.sync_data()?;
        Ok(file.metadata()?.len())
    }

    /// `clear_token_captures_for_rollouts`: every file of `id` deleted but its lock.
    pub fn clear(&self, id: &str) -> std::io::Result<()> {
        self.lock(id)?;
        for suffix in [
            ".tokens.jsonl",
            ".tokens.incomplete",
            ".tokens.intents",
            ".tokens.state.json",
        ] {
            let _ = std::fs::remove_file(self.path(id, suffix));
        }
        Ok(())
    }

    /// `begin_call`: the call's intent, before it is dispatched.
    pub fn begin_call(&self, id: &str, call_id: &str) -> std::io::Result<()> {
        self.lock(id)?;
        self.append_line(&self.path(id, ".tokens.intents"), call_id)
            .map(drop)
    }

    /// `append`: the call's record, then the state's index.
    pub fn append(&self, id: &str, call: &Call) -> std::io::Result<()> {
        self.append_record_line(id, &call.to_line(id))
    }

    /// `append` of a record already serialized (`line`, without its newline), as the
    /// reference appends: the state's index of line digests first brought up to the file
    /// ([`RunWriter::index`]); a call id indexed already with the same digest is not written
    /// again, with another is refused (the rollout marked incomplete); else the line is
    /// appended, its digest indexed under its call id and the state replaced. The index
    /// grows with every call, so a reader reads a longer state at every append. A frozen
    /// or retired rollout refuses it; a null digest counts as none. Unlike the reference, a
    /// state that does not parse is taken as a new one, and a version or size is read as
    /// an integer only when it is one.
    pub fn append_record_line(&self, id: &str, line: &str) -> std::io::Result<()> {
        self.lock(id)?;
        let records = self.path(id, ".tokens.jsonl");
        let mut state = self.state(id);
        let index_changed = self.sync_index(id, &records, &mut state)?;
        let digest = line_digest(line.as_bytes());
        let call_id = line_call_id(line.as_bytes())
            .ok_or_else(|| invalid(format!("{id}: a record line names no call id")))?;
        if state["retired"].as_bool() == Some(true) || state["frozen"].as_bool() == Some(true) {
            return Err(invalid(format!("{id}: token capture is frozen or retired")));
        }
        // A null digest counts as none, as Python's `dict.get` gives `None` for it.
        match state["entry_digests"]
            .get(&call_id)
            .filter(|d| !d.is_null())
        {
            Some(existing) if existing == digest.as_str() => {
                return if index_changed {
                    self.write_state(id, &state)
                } else {
                    Ok(())
                };
            }
            Some(_) => {
                self.mark_incomplete_state(id, &mut state)?;
                return Err(invalid(format!(
                    "model call id {call_id:?} was reused with a different payload"
                )));
            }
            None => {}
        }
        let size = self.append_line(&records, line)?;
        state["indexed_size"] = json!(size);
        state["entry_digests"][call_id] = json!(digest);
        bump_version(&mut state, 1);
        self.write_state(id, &state)
    }

    /// A record line written whatever the index holds, as no reference writer would (a
    /// store another writer, or a lost state, left with repeated call ids): the line
    /// appended and the index as `append` leaves it, the first digest of an id kept.
    pub fn append_line_anyway(&self, id: &str, line: &str) -> std::io::Result<()> {
        self.lock(id)?;
        let records = self.path(id, ".tokens.jsonl");
        let mut state = self.state(id);
        self.sync_index(id, &records, &mut state)?;
        let size = self.append_line(&records, line)?;
        if let Some(call_id) = line_call_id(line.as_bytes()) {
            let index = &mut state["entry_digests"];
            if index.get(&call_id).is_none() {
                index[call_id] = json!(line_digest(line.as_bytes()));
            }
        }
        state["indexed_size"] = json!(size);
        bump_version(&mut state, 1);
        self.write_state(id, &state)
    }

    /// [`RunWriter::append_line_anyway`] of a call.
    pub fn append_anyway(&self, id: &str, call: &Call) -> std::io::Result<()> {
        self.append_line_anyway(id, &call.to_line(id))
    }

    fn mark_incomplete_state(&self, id: &str, state: &mut Value) -> std::io::Result<()> {
        state["incomplete"] = json!(true);
        bump_version(state, 1);
        self.write_state(id, state)
    }

    /// `_sync_entry_index`: the lines of `records` past the state's `indexed_size` digested
    /// into its index, whether it changed. As the reference: an index that is not an object
    /// (or a size that is not an int) is legacy, rebuilt from the size it names (else 0); a
    /// size past the file is an error; a line that does not parse is corruption before more
    /// content and a torn write at the end (cut off, the file truncated); a call id with two
    /// payloads marks the rollout incomplete and is an error; the version grows by the lines
    /// recovered (not for a legacy state).
    fn sync_index(&self, id: &str, records: &Path, state: &mut Value) -> std::io::Result<bool> {
        use std::io::{Read, Seek};
        let mut file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(records)
        {
            Ok(file) => Some(file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        let mut size = match &file {
            Some(file) => file.metadata()?.len(),
            None => 0,
        };
        let legacy = !state["entry_digests"].is_object() || !state["indexed_size"].is_i64();
        if !state["entry_digests"].is_object() {
            state["entry_digests"] = json!({});
        }
        let indexed = state["indexed_size"].as_i64().unwrap_or(0);
        if indexed < 0 || indexed as u64 > size {
            return Err(invalid(format!("{id}: invalid token-capture index offset")));
        }
        let indexed = indexed as u64;
        if indexed == size && !legacy {
            return Ok(false);
        }
        let mut recovered = 0;
        if let Some(file) = &mut file {
            let mut tail = Vec::new();
            file.seek(std::io::SeekFrom::Start(indexed))?;
            file.read_to_end(&mut tail)?;
            let mut position = 0;
            while position < tail.len() {
                let end = tail[position..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(tail.len(), |at| position + at);
                let payload = py_strip(&tail[position..end]);
                if !payload.is_empty() {
                    if serde_json::from_slice::<serde::de::IgnoredAny>(payload).is_err() {
                        if !py_strip(tail.get(end + 1..).unwrap_or_default()).is_empty() {
                            return Err(invalid(format!("{id}: a malformed line before more")));
                        }
                        // A torn final line was never acknowledged: cut off.
                        size = indexed + position as u64;
                        file.set_len(size)?;
                        break;
                    }
                    let call_id = line_call_id(payload).unwrap_or_default();
                    let digest = line_digest(payload);
                    match state["entry_digests"]
                        .get(&call_id)
                        .filter(|d| !d.is_null())
                    {
                        Some(existing) if existing != digest.as_str() => {
                            self.mark_incomplete_state(id, state)?;
                            return Err(invalid(format!(
                                "model call id {call_id:?} has conflicting durable payloads"
                            )));
                        }
                        _ => state["entry_digests"][call_id] = json!(digest),
                    }
                    recovered += 1;
                }
                position = end + 1;
            }
        }
        state["indexed_size"] = json!(size);
        if recovered > 0 && !legacy {
            bump_version(state, recovered);
        }
        Ok(true)
    }

    /// `_sync_entry_index` alone: the lines past the state's index digested into it and the
    /// state replaced (what the reference does before its next append; a store written by
    /// [`Rollout::write`] has no index).
    pub fn index(&self, id: &str) -> std::io::Result<()> {
        let mut state = self.state(id);
        if self.sync_index(id, &self.path(id, ".tokens.jsonl"), &mut state)? {
            self.write_state(id, &state)?;
        }
        Ok(())
    }

    /// `freeze_now`: the snapshot is taken.
    pub fn freeze(&self, id: &str) -> std::io::Result<()> {
        let mut state = self.state(id);
        state["frozen"] = json!(true);
        state["snapshot_id"] = json!(format!("snap-{id}"));
        bump_version(&mut state, 1);
        self.write_state(id, &state)
    }

    /// `drop` after durable handoff: the payload deleted, a frozen tombstone kept.
    pub fn retire(&self, id: &str) -> std::io::Result<()> {
        for suffix in [".tokens.jsonl", ".tokens.incomplete", ".tokens.intents"] {
            let _ = std::fs::remove_file(self.path(id, suffix));
        }
        let mut state = self.state(id);
        state["indexed_size"] = json!(0);
        state["entry_digests"] = json!({});
        state["retired"] = json!(true);
        self.write_state(id, &state)
    }

    /// One rollout of the run, start to end: cleared, its calls (the last one lost when
    /// `masked`), frozen, and retired when it delivers and `retire`.
    pub fn rollout(
        &self,
        id: &str,
        calls: usize,
        masked: bool,
        retire: bool,
    ) -> std::io::Result<()> {
        self.clear(id)?;
        let mut rng = Rng::new(id.bytes().map(u64::from).sum::<u64>() + 1);
        let rollout = linear_rollout(id, calls.max(1), &mut rng, 5, false, true);
        for call in &rollout.calls {
            self.begin_call(id, &call.id)?;
            self.append(id, call)?;
        }
        if masked {
            // Dispatched, and its record never came: the freeze masks the rollout.
            self.begin_call(id, &format!("{id}-lost"))?;
        }
        self.freeze(id)?;
        if retire && !masked {
            self.retire(id)?;
        }
        Ok(())
    }

    /// Run `plan`; the number of rollouts masked.
    pub fn run(&self, plan: &RunPlan) -> std::io::Result<usize> {
        let mut masked = 0;
        for n in 1..=plan.rollouts {
            let lose = plan.masked_every.is_some_and(|every| n % every == 0);
            masked += usize::from(lose);
            self.rollout(
                &format!("{}{n}", plan.prefix),
                plan.calls,
                lose,
                plan.retire,
            )?;
            std::thread::sleep(plan.pace);
        }
        Ok(masked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_digest_is_sha256_in_hex() {
        // FIPS 180-2's first example.
        assert_eq!(
            line_digest(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_call_id_is_read_from_its_key_only() {
        let line =
            br#"{"generation_token_ids":[1],"model_call_id":"c\u0031","x":"\"model_call_id\""}"#;
        assert_eq!(line_call_id(line).as_deref(), Some("c1"));
        assert_eq!(line_call_id(br#"{"model":"m"}"#), None);
    }
}
