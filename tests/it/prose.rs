//! Flowing decoded text in the token pane, with a production tokenizer (DeepSeek-V3's
//! byte-level BPE): characters split across tokens (emoji, CJK) appear whole, colored runs
//! keep their origin, and the pane shows only what fits.

use crate::common;
use crate::common::{key, keys, screen};

use std::io::Read;
use std::path::{Path, PathBuf};

use crossterm::event::KeyCode;
use tokscope::app::{App, TokenText};
use tokscope_core::detok::Detokenizer;
use tokscope_core::verdict::VerdictOptions;
use tokscope_testkit::{Call, Rollout};

/// DeepSeek-V3's tokenizer, unpacked into `dir`.
fn deepseek(dir: &Path) -> Detokenizer {
    let packed = common::fixture("tokenizers/deepseek-v3.tokenizer.json.gz");
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(packed).unwrap())
        .read_to_end(&mut json)
        .unwrap();
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, json).unwrap();
    Detokenizer::load(&path).unwrap()
}

/// The screen as text, without the blank cell a terminal leaves after a wide character.
fn squeezed(screen: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for c in screen.chars() {
        if skip && c == ' ' {
            skip = false;
            continue;
        }
        skip = unicode_width::UnicodeWidthChar::width(c) == Some(2);
        out.push(c);
    }
    out
}

/// A store of one frozen rollout `id` with one call, written into `store`, open in an app of
/// `size` decoding with `detok`, the token pane focused and switched to flowing text.
fn one_call_in_prose(
    store: &Path,
    id: &str,
    prompt: Vec<u64>,
    generation: Vec<u64>,
    size: (u16, u16),
    detok: Detokenizer,
) -> App {
    Rollout {
        id: id.into(),
        calls: vec![Call::root(
            &format!("{id}-c001"),
            prompt,
            generation,
            1_790_000_000.0,
        )],
        frozen: true,
        ..Rollout::default()
    }
    .write(store)
    .unwrap();
    let stores = vec![store.to_path_buf()];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    let mut app =
        App::new(stores, analyses, options, common::viewport(size.0, size.1)).with_tokenizer(detok);
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Tab);
    // T: decoded cells → flowing text.
    keys(&mut app, "T");
    app
}

const PROMPT: &str = "The crab 🦀 sorts 漢字 and naïve café 👩‍💻 text.\nSecond line: 🎉!";
const ANSWER: &str = "Done: 東京 🚀 ok.";

#[test]
fn split_characters_appear_whole_in_flowing_text() {
    let dir = tempfile::tempdir().unwrap();
    let detok = deepseek(dir.path());
    let prompt = detok.encode(PROMPT);
    let answer = detok.encode(ANSWER);
    // The tokenizer splits some of these characters across tokens: piece by piece they are
    // replacement characters.
    let pieces: String = prompt
        .iter()
        .map(|&id| {
            let text = detok.decode(&[i128::from(id)]);
            if text.contains('\u{FFFD}') {
                "�"
            } else {
                "."
            }
            .to_owned()
        })
        .collect();
    assert!(pieces.contains('�'), "nothing split: {pieces}");
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let mut app = one_call_in_prose(
        &store,
        "emoji",
        prompt,
        answer,
        (120, 40),
        deepseek(dir.path()),
    );
    assert_eq!(app.token_text, TokenText::Prose);
    let shown = squeezed(&screen(&app));
    for whole in ["🦀", "漢字", "naïve café", "👩‍💻", "🎉", "東京", "🚀"] {
        assert!(shown.contains(whole), "{whole} missing:\n{shown}");
    }
    assert!(!shown.contains('\u{FFFD}'), "{shown}");
    // Line breaks in the text are line breaks on screen, marked.
    assert!(shown.contains("text.⏎"), "{shown}");
    // Search finds what the pieces alone cannot: characters split across tokens.
    let values: Vec<i128> = {
        let view = app.view.as_ref().unwrap();
        view.tokens
            .provenance
            .as_ref()
            .unwrap()
            .tokens
            .values()
            .collect()
    };
    for wanted in ["🦀", "漢字", "👩‍💻", "東京 🚀"] {
        key(&mut app, KeyCode::Home);
        keys(&mut app, "/");
        keys(&mut app, wanted);
        key(&mut app, KeyCode::Enter);
        let at = app.view.as_ref().unwrap().tokens.cursor;
        let detok = app.detok.clone().unwrap();
        let around = detok.decode(&values[at..(at + 6).min(values.len())]);
        assert!(around.contains(wanted), "{wanted}: at {at} {around:?}");
        assert!(
            !detok
                .decode(&values[at + 1..(at + 6).min(values.len())])
                .contains(wanted),
            "{wanted}: the match starts at {at}"
        );
    }
    // T again: back to ids.
    keys(&mut app, "T");
    assert_eq!(app.token_text, TokenText::Ids);
}

#[test]
fn flowing_text_of_a_long_chain_shows_the_cursor_and_only_what_fits() {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    let detok = Detokenizer::load(&assets.join("tokenizer.json")).unwrap();
    let stores = vec![PathBuf::from("assets/demo-store")];
    let options = VerdictOptions::default();
    let analyses = tokscope_core::load::analyze_all(
        &tokscope_core::load::locate(&stores, &[]).unwrap(),
        &options,
    );
    let mut app =
        App::new(stores, analyses, options, common::viewport(80, 24)).with_tokenizer(detok);
    keys(&mut app, "/demo-mismatch");
    key(&mut app, KeyCode::Enter);
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Tab);
    keys(&mut app, "T");
    // The last token: the text shown ends the chain, the cursor on it.
    keys(&mut app, "G");
    let shown = screen(&app);
    let view = app.view.as_ref().unwrap();
    let provenance = view.tokens.provenance.as_ref().unwrap();
    let ids: Vec<i128> = provenance.tokens.values().collect();
    let last = app.detok.as_ref().unwrap().decode(&ids[ids.len() - 1..]);
    assert!(
        shown.contains(last.trim()),
        "{last:?} not on screen:\n{shown}"
    );
    insta::assert_snapshot!("prose_demo_mismatch_80x24", shown);
}

#[test]
fn the_cursor_stays_on_screen_through_many_line_breaks() {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    let detok = Detokenizer::load(&assets.join("tokenizer.json")).unwrap();
    let text: String = (0..40)
        .map(|i| format!("w{i}z{}", "\n".repeat(8)))
        .collect();
    let prompt = detok.encode(&text);
    for size in [(80, 24), (120, 40)] {
        let dir = tempfile::tempdir().unwrap();
        let detok_app = Detokenizer::load(&assets.join("tokenizer.json")).unwrap();
        let mut app = one_call_in_prose(
            dir.path(),
            "breaks",
            prompt.clone(),
            vec![1, 2],
            size,
            detok_app,
        );
        assert_eq!(app.token_text, TokenText::Prose);
        let values: Vec<i128> = prompt.iter().map(|&t| i128::from(t)).collect();
        for i in (0..40).step_by(3) {
            let marker = format!("w{i}z");
            let at = (0..values.len())
                .find(|&p| {
                    detok
                        .decode(&values[p..(p + 4).min(values.len())])
                        .starts_with(&marker)
                })
                .expect("the marker's token");
            keys(&mut app, &format!(":pos {at}"));
            key(&mut app, KeyCode::Enter);
            let shown = screen(&app);
            assert!(
                shown.contains(&marker),
                "{size:?}: {marker} at {at}:\n{shown}"
            );
        }
    }
}

#[test]
fn the_cursor_stays_on_screen_in_text_without_line_breaks() {
    let assets = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets");
    let detok = Detokenizer::load(&assets.join("tokenizer.json")).unwrap();
    // Long tokens (wider than a cell) and no line break: one line of many rows.
    let long: Vec<(u64, String)> = (0..50_000u64)
        .filter_map(|id| {
            let piece = detok.decode(&[i128::from(id)]);
            (piece.len() >= 10 && piece.chars().all(|c| c.is_ascii_alphabetic() || c == ' '))
                .then_some((id, piece))
        })
        .take(6)
        .collect();
    assert!(long.len() == 6, "long tokens: {long:?}");
    let mut prompt = vec![long[0].0; 3000];
    let markers = [100, 300, 700, 1500, 2900];
    for (k, &at) in markers.iter().enumerate() {
        prompt[at] = long[k + 1].0;
    }
    let dir = tempfile::tempdir().unwrap();
    let detok_app = Detokenizer::load(&assets.join("tokenizer.json")).unwrap();
    let mut app = one_call_in_prose(dir.path(), "flat", prompt, vec![1, 2], (80, 24), detok_app);
    for (k, &at) in markers.iter().enumerate() {
        keys(&mut app, &format!(":pos {at}"));
        key(&mut app, KeyCode::Enter);
        let shown = screen(&app);
        let marker = long[k + 1].1.trim();
        assert!(shown.contains(marker), "{marker} at {at}:\n{shown}");
    }
}

#[test]
fn the_cursor_on_a_token_that_draws_nothing_is_still_marked() {
    let dir = tempfile::tempdir().unwrap();
    let detok = deepseek(dir.path());
    // A keycap: "1", then a variation selector and a combining keycap, which draw nothing.
    let prompt = detok.encode("Press 1\u{fe0f}\u{20e3} then go.");
    let answer = detok.encode("ok");
    let at = prompt
        .iter()
        .position(|&id| {
            let text = detok.decode(&[i128::from(id)]);
            !text.is_empty()
                && !text.contains('\u{FFFD}')
                && unicode_width::UnicodeWidthStr::width(text.as_str()) == 0
        })
        .expect("DeepSeek-V3 gives the marks a token that draws nothing");
    for (n, size) in [(80, 24), (120, 40), (160, 45), (200, 50)]
        .into_iter()
        .enumerate()
    {
        let store = dir.path().join(format!("store-{n}"));
        std::fs::create_dir(&store).unwrap();
        let mut app = one_call_in_prose(
            &store,
            "keycap",
            prompt.clone(),
            answer.clone(),
            size,
            deepseek(dir.path()),
        );
        let before = squeezed(&screen(&app));
        assert!(
            !before.contains('◌'),
            "{size:?}: only under the cursor: {before}"
        );
        keys(&mut app, &format!(":pos {at}"));
        key(&mut app, KeyCode::Enter);
        assert_eq!(app.view.as_ref().unwrap().tokens.cursor, at);
        let shown = squeezed(&screen(&app));
        assert!(
            shown.contains('◌'),
            "{size:?}: the cursor's place is marked:\n{shown}"
        );
    }
}
