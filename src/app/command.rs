//! The `:` command line: go to a rollout, a call, a token position or a chain by name or
//! number, and (in replay) jump in time.

use super::{App, JumpTarget, Notice, Pane};

/// A command typed after `:`.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// `:rollout ID` — select the rollout (clearing the list's filters if they hide it).
    Rollout(String),
    /// `:call ID` — select the call in the open rollout's tree (full id, or without the
    /// rollout's prefix, e.g. `c003`).
    Call(String),
    /// `:pos N` — put the token cursor on position N.
    Pos(usize),
    /// `:chain N` — show chain N (1 is the first) in the token pane.
    Chain(usize),
    /// Replay only: `:N` (a call), `:+s` / `:-s` (seconds from now), `:@s` (seconds after the
    /// first call), `:CALL-ID` (or `:replay …`) — jump in time.
    Replay(JumpTarget),
    /// `:causes` — open the causes view.
    Causes,
    /// `:timeline` — open the timeline view.
    Timeline,
    /// `:q` / `:quit` — leave, as `q` does.
    Quit,
}

/// Why a command line was not understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandError(pub String);

impl Command {
    /// Read a command line (without the `:`).
    pub fn parse(text: &str) -> Result<Command, CommandError> {
        let text = text.trim();
        let (word, rest) = text
            .split_once(char::is_whitespace)
            .map_or((text, ""), |(w, r)| (w, r.trim()));
        let number = |what: &str| {
            rest.parse::<usize>()
                .map_err(|_| CommandError(format!(":{word} needs {what}, not {rest:?}")))
        };
        let name = |what: &str| {
            if rest.is_empty() {
                Err(CommandError(format!(":{word} needs {what}")))
            } else {
                Ok(rest.to_owned())
            }
        };
        Ok(match word {
            "rollout" | "r" => Command::Rollout(name("a rollout id")?),
            "call" | "c" => Command::Call(name("a call id")?),
            "pos" | "p" => Command::Pos(number("a token position")?),
            "chain" => match number("a chain number (1 is the first)")? {
                0 => return Err(CommandError(":chain counts from 1".into())),
                n => Command::Chain(n),
            },
            "replay" | "jump" => Command::Replay(JumpTarget::parse(rest).ok_or_else(|| {
                CommandError(format!(
                    ":{word} needs a call, +seconds, -seconds or @seconds"
                ))
            })?),
            "q" | "quit" | "q!" | "qa" => Command::Quit,
            "causes" | "why" => Command::Causes,
            "timeline" | "time" => Command::Timeline,
            "" => return Err(CommandError("empty command".into())),
            _ if rest.is_empty() => Command::Replay(
                JumpTarget::parse(word).ok_or_else(|| CommandError("empty command".into()))?,
            ),
            _ => return Err(CommandError(format!("unknown command :{word}"))),
        })
    }
}

impl App {
    /// Run a typed command line.
    pub(super) fn run_command(&mut self, text: &str) {
        let command = match Command::parse(text) {
            Ok(command) => command,
            Err(CommandError(why)) => {
                self.message = Some(Notice::BadCommand(why));
                return;
            }
        };
        match command {
            Command::Rollout(id) => self.go_to_rollout(&id),
            Command::Call(id) => match self.resolve_call(&id) {
                Some(call) => self.select_call(&call),
                None => self.message = Some(Notice::NoSuchCall(id)),
            },
            Command::Pos(position) => {
                self.focus_pane(Pane::Tokens);
                self.with_view(|view, _| view.tokens.set_cursor(position));
            }
            Command::Chain(number) => {
                self.focus_pane(Pane::Tokens);
                self.notice_from_view(|view, base| {
                    (!view.show_chain(base, number - 1)).then_some(Notice::NoSuchChain(number))
                });
            }
            Command::Quit => self.quit = true,
            Command::Causes => {
                if self.causes.is_none() {
                    self.toggle_causes();
                }
            }
            Command::Timeline => {
                if self.timeline.is_none() {
                    self.toggle_timeline();
                }
            }
            Command::Replay(target) => match (&target, &self.replay) {
                (_, Some(_)) => self.jump(&target),
                // Outside replay a bare word is a mistyped command, not a replay jump.
                (JumpTarget::CallId(word), None) => {
                    self.message = Some(Notice::BadCommand(format!("unknown command :{word}")));
                }
                (_, None) => self.message = Some(Notice::ReplayOnly),
            },
        }
    }

    /// Select the rollout `id` (exact, else the only one containing it) in the list.
    pub(super) fn go_to_rollout(&mut self, id: &str) {
        let exact = self.rollouts.iter().position(|s| s.rollout_id() == id);
        let found = exact.or_else(|| {
            let mut matching =
                (0..self.rollouts.len()).filter(|&i| self.rollouts[i].rollout_id().contains(id));
            matching.next().filter(|_| matching.next().is_none())
        });
        let Some(index) = found else {
            self.message = Some(Notice::NoSuchRollout(id.to_owned()));
            return;
        };
        if !self.list.rows.contains(&index) {
            // Filtered out: the filters give way to what was asked for by name.
            self.list.filter.clear();
            self.list.masked_only = false;
            self.list.reason = None;
            self.refresh_list();
            self.message = Some(Notice::FiltersCleared);
        }
        if let Some(row) = self.list.rows.iter().position(|&i| i == index) {
            self.list.scroll.select(row);
            self.focus_pane(Pane::List);
            self.open_selected();
        }
    }

    /// The full id of a call of the open rollout named `id`: exactly, with the rollout's
    /// prefix added, or as the only id containing it.
    fn resolve_call(&self, id: &str) -> Option<String> {
        let analysis = self.shown()?;
        let records = &analysis.capture.records;
        let prefixed = format!("{}-{id}", analysis.rollout_id());
        records
            .iter()
            .find(|r| r.model_call_id == id || r.model_call_id == prefixed)
            .or_else(|| {
                let mut matching = records.iter().filter(|r| r.model_call_id.contains(id));
                matching.next().filter(|_| matching.next().is_none())
            })
            .map(|r| r.model_call_id.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(
            Command::parse("rollout 0-5-a0"),
            Ok(Command::Rollout("0-5-a0".into()))
        );
        assert_eq!(
            Command::parse(" call  c003 "),
            Ok(Command::Call("c003".into()))
        );
        assert_eq!(Command::parse("pos 101"), Ok(Command::Pos(101)));
        assert_eq!(Command::parse("chain 2"), Ok(Command::Chain(2)));
        assert_eq!(
            Command::parse("5"),
            Ok(Command::Replay(JumpTarget::Call(5)))
        );
        assert_eq!(
            Command::parse("+30"),
            Ok(Command::Replay(JumpTarget::Relative(30.0)))
        );
        assert_eq!(
            Command::parse("-10"),
            Ok(Command::Replay(JumpTarget::Relative(-10.0)))
        );
        assert_eq!(
            Command::parse("@600"),
            Ok(Command::Replay(JumpTarget::At(600.0)))
        );
        assert_eq!(
            Command::parse("-c003"),
            Ok(Command::Replay(JumpTarget::CallId("-c003".into())))
        );
        assert_eq!(
            Command::parse("replay c003"),
            Ok(Command::Replay(JumpTarget::CallId("c003".into())))
        );
        assert!(Command::parse("pos x").is_err());
        assert!(Command::parse("chain 0").is_err());
        assert!(Command::parse("call").is_err());
        assert!(Command::parse("frobnicate now").is_err());
        assert!(Command::parse("").is_err());
        assert_eq!(Command::parse("q"), Ok(Command::Quit));
        assert_eq!(Command::parse("causes"), Ok(Command::Causes));
    }
}
