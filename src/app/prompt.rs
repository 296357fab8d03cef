//! The prompts: typing the list filter, a replay jump, an export path, and answering the
//! overwrite question.

use std::path::{Path, PathBuf};

use super::{App, ExportError, ExportKind, Mode, Notice, TextKey, action};

impl App {
    pub(super) fn on_text(&mut self, key: TextKey) {
        let submit = key == TextKey::Submit;
        let cancel = key == TextKey::Cancel;
        match &mut self.mode {
            Mode::Normal => {}
            Mode::Filter => {
                if cancel {
                    self.list.filter.clear();
                }
                action::edit(&mut self.list.filter, key);
                if submit || cancel {
                    self.mode = Mode::Normal;
                }
                if submit && let Some(problem) = super::list::filter_problem(&self.list.filter) {
                    self.message = Some(Notice::BadFilter(problem));
                }
                self.refresh_list();
            }
            Mode::Command(text) => {
                action::edit(text, key);
                if submit {
                    let line = std::mem::take(text);
                    self.mode = Mode::Normal;
                    self.run_command(&line);
                } else if cancel {
                    self.mode = Mode::Normal;
                }
            }
            Mode::Search(text) => {
                action::edit(text, key);
                if submit {
                    let query = std::mem::take(text);
                    self.mode = Mode::Normal;
                    self.start_search(query);
                } else if cancel {
                    self.mode = Mode::Normal;
                }
            }
            Mode::Export { what, path } => {
                action::edit(path, key);
                if submit {
                    let (what, path) = (*what, PathBuf::from(path.as_str()));
                    self.mode = Mode::Normal;
                    self.write_export(what, &path, false);
                } else if cancel {
                    self.mode = Mode::Normal;
                }
            }
            Mode::ConfirmOverwrite { what, path } => {
                let (what, path) = (*what, path.clone());
                self.mode = Mode::Normal;
                match key {
                    TextKey::Char('y' | 'Y') => self.write_export(what, &path, true),
                    _ => self.message = Some(Notice::NotOverwritten(path)),
                }
            }
        }
    }

    /// Export, asking before replacing an existing file.
    pub(super) fn write_export(&mut self, what: ExportKind, path: &Path, overwrite: bool) {
        self.message = match self.export(what, path, overwrite) {
            Ok(written) => Some(Notice::Exported(written)),
            Err(ExportError::Exists(existing)) => {
                self.mode = Mode::ConfirmOverwrite {
                    what,
                    path: existing,
                };
                None
            }
            Err(error) => Some(Notice::ExportFailed(error)),
        };
    }
}
