//! The canonical JSONL reader on arbitrary bytes, strict and lenient: no
//! panic, and a line error points at a line of the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use looptune_core::error::Error;

fuzz_target!(|data: &[u8]| {
    let lines = data.split(|b| *b == b'\n').count() as u64;
    for lenient in [false, true] {
        if let Err(Error::Line { line, .. }) =
            looptune_core::input::parse_canonical("f.jsonl", "f", data, lenient)
        {
            assert!(line >= 1 && line <= lines.max(1), "line {line} of {lines}");
        }
    }
});
