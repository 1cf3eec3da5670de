#![no_main]

use tessera::layers::types::FilterType;

libfuzzer_sys::fuzz_target!(|data: &[u8]| tessera_fuzz::filter_reverse(FilterType::Gzip, data));
