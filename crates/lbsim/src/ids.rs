//! Typed indices into the simulator's arenas. Components refer to each other by these ids, never by
//! reference, so the world can be one owned structure without shared mutability.

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u32);
        impl $name {
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// A host (end point); hosts are numbered 0..hosts.
    HostId
);
id_type!(
    /// A switch; switches are numbered 0..switches, lowest tier first.
    SwitchId
);
id_type!(
    /// An egress port, together with the link it drives. Host NICs are ports 0..hosts.
    PortId
);
id_type!(
    /// A flow (one message from one host to another).
    FlowId
);

/// The largest id an event can name: events pack a 3-bit kind and a 29-bit id into 4 bytes, so
/// the calendar's entries stay 16 bytes. `Scenario::build` refuses fabrics, workloads and
/// failure lists whose ids would not fit.
pub const MAX_EVENT_ID: u32 = (1 << 29) - 1;

/// Either end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeId {
    Host(HostId),
    Switch(SwitchId),
}
