//! The `tokscope` binary: parse the command line, run the command (each in its own module of
//! [`commands`]), exit with its status. An error is one sanitized line and status 2.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;

fn main() -> ExitCode {
    // Every command keeps the memory it frees; the explorer and `check --follow` give it back
    // from their watcher (`tokscope_core::memory`). SAFETY: no thread is started yet.
    unsafe { tokscope_core::memory::keep_freed_memory() };
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!(
                "tokscope: {}",
                tokscope_core::text::sanitize(&format!("{error:#}"))
            );
            ExitCode::from(2)
        }
    }
}
