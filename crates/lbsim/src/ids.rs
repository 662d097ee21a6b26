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

/// Either end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeId {
    Host(HostId),
    Switch(SwitchId),
}
