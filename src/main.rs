//! The `tokscope` binary: parse the command line, run the command (each in its own module of
//! [`commands`]), exit with its status. An error is one sanitized line and status 2.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;

fn main() -> ExitCode {
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
