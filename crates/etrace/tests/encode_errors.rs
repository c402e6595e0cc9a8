//! The encoder's errors are typed ([`EncodeError`]) and say what they said as text before
//! (`rvtrace encode etrace` prints them).

use rvtrace_etrace::config::{ConfigInputs, TraceConfig};
use rvtrace_etrace::encoder::{EncodeError, Encoder, FrameWriter, PacketSink};
use rvtrace_etrace::TeInst;

fn config(inputs: ConfigInputs) -> TraceConfig {
    TraceConfig::build(&ConfigInputs {
        xlen_bits: 64,
        ..inputs
    })
    .unwrap()
}

#[test]
fn implicit_return_with_a_3_bit_itype() {
    let cfg = config(ConfigInputs {
        implicit_return: true,
        itype_width: Some(3),
        ..ConfigInputs::default()
    });
    let Err(e) = Encoder::new(&cfg, Vec::<TeInst>::new()) else {
        panic!("accepted")
    };
    assert!(matches!(e, EncodeError::ImplicitReturnNeedsItype4));
    assert_eq!(
        e.to_string(),
        "implicit return needs a 4-bit itype (calls and returns are not told apart with 3 bits)"
    );
}

#[test]
fn parameters_the_codec_cannot_use() {
    let mut cfg = config(ConfigInputs::default());
    cfg.params.iaddress_lsb_p = 3;
    let Err(e) = Encoder::new(&cfg, Vec::<TeInst>::new()) else {
        panic!("accepted")
    };
    let want = cfg.params.validate().unwrap_err();
    assert!(matches!(e, EncodeError::Params(c) if c == want));
    assert_eq!(e.to_string(), want.to_string());
}

/// A writer that refuses every byte.
struct Full;

impl std::io::Write for Full {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        Err(std::io::Error::other("disk full"))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_sink_cannot_write() {
    let cfg = config(ConfigInputs::default());
    // The encoder sends its first support packet at once.
    let Err(e) = Encoder::new(&cfg, FrameWriter::new(Full, &cfg)) else {
        panic!("accepted")
    };
    assert!(matches!(&e, EncodeError::Io(io) if io.to_string() == "disk full"));
    assert_eq!(e.to_string(), "disk full");
    assert_eq!(String::from(e), "disk full");
}

#[test]
fn a_packet_that_does_not_fit_its_layout() {
    let cfg = config(ConfigInputs::default());
    let mut w = FrameWriter::new(Vec::new(), &cfg);
    // *privilege* is 2 bits wide here.
    let p = TeInst::Context {
        privilege: 1 << 40,
        time: 0,
        context: 0,
    };
    let e = w.packet(&p).unwrap_err();
    let EncodeError::Packet { fields, error } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*fields, p.fields(&cfg.params).to_string());
    assert_eq!(e.to_string(), format!("{fields}: {error}"));
    assert!(e.to_string().contains("does not fit field"), "{e}");
}
