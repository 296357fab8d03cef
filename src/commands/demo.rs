//! `tokscope demo`: a writer fills a fresh directory, as the reference writer would, while
//! the explorer watches it.

use std::path::PathBuf;
use std::process::ExitCode;

use super::explore::{Explore, Given, Start, live_app, open, print_table};
use super::{assets, interactive, load_config};
use crate::cli::DemoArgs;

/// Run `demo`.
pub fn run(args: DemoArgs, rows: Vec<PathBuf>) -> anyhow::Result<ExitCode> {
    let given = Given {
        tokenizer: None,
        stores: false,
        poll: None,
        alarm: args.alarm,
        no_watch: false,
    };
    let mut options = Explore::resolve(given, load_config()?, rows);
    let source = assets::dir().join("demo-store");
    if !interactive() {
        // Nothing to watch without a terminal: the table of the store the demo writes.
        return print_table(&[source], &options).map(ExitCode::from);
    }
    let dir = std::env::temp_dir().join(format!("tokscope-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let writer = tokscope_core::live::demo::start(&source, &dir, args.pace)?;
    if options.tokenizer.is_none() {
        options.tokenizer = Some(assets::dir().join("tokenizer.json"));
    }
    options.no_watch = false;
    options.remember = false;
    let result = open(vec![dir.clone()], options, Start::Explore, live_app);
    drop(writer);
    let _ = std::fs::remove_dir_all(&dir);
    result.map(ExitCode::from)
}
