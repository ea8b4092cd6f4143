//! Labels (CSV and JSONL) on arbitrary text: no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    use looptune_core::input::labels::LabelsSyntax;
    for syntax in [LabelsSyntax::Csv, LabelsSyntax::Jsonl] {
        for lenient in [false, true] {
            let mut warnings = Vec::new();
            let _ = looptune_core::input::labels::parse_labels("l.csv", text, syntax, lenient, &mut warnings);
        }
    }
});
