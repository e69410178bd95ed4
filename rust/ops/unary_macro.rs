//! What a unary entry expands to: the kernel traits of the unary ops and the
//! `unary_ops!` macro that turns the entries of `unary.rs` into the `UnaryOp` enum,
//! its specs, kernels and derivative rule.

use super::unary::UnaryOp;

/// Float kernels of the unary ops, one per element type.
pub trait UnaryKernel: Sized {
    fn unary(op: UnaryOp, x: &[Self]) -> Vec<Self>;
}

/// Integer kernels of the unary ops that keep an integer dtype (`Ints::Keep`); None for the others.
pub trait IntegerKernel: Sized {
    fn unary(op: UnaryOp, x: &[Self]) -> Option<Vec<Self>>;
}

/// What integer kernels are written with: the wrapping operations of every integer
/// type, unsigned ones included (`-x` of a uint8 wraps, its `abs` is itself).
pub trait IntegerElement: Copy + Ord {
    fn wrapping_neg(self) -> Self;
    fn wrapping_abs(self) -> Self;
    fn wrapping_mul(self, other: Self) -> Self;
    /// -1, 0 or 1.
    fn sign(self) -> Self;
    fn zero() -> Self;
}

macro_rules! impl_integer_element {
    ($t:ty, |$v:ident| $abs:expr, $sign:expr) => {
        impl IntegerElement for $t {
            #[inline(always)]
            fn wrapping_neg(self) -> Self {
                <$t>::wrapping_neg(self)
            }
            #[inline(always)]
            fn wrapping_abs(self) -> Self {
                let $v = self;
                $abs
            }
            #[inline(always)]
            fn wrapping_mul(self, other: Self) -> Self {
                <$t>::wrapping_mul(self, other)
            }
            #[inline(always)]
            fn sign(self) -> Self {
                let $v = self;
                $sign
            }
            #[inline(always)]
            fn zero() -> Self {
                0
            }
        }
    };
}

impl_integer_element!(i64, |v| v.wrapping_abs(), v.signum());
impl_integer_element!(i32, |v| v.wrapping_abs(), v.signum());
impl_integer_element!(u8, |v| v, v.min(1));

/// The integer arm of one op: the kernel when it keeps integers, else None.
macro_rules! integer_arm {
    ($x:ident, $t:ty) => {
        None
    };
    ($x:ident, $t:ty, $iv:ident, $ikernel:expr) => {
        Some(map($x, |$iv: $t| $ikernel))
    };
}

macro_rules! unary_ops {
    // torch has `Tensor.NAME_` for every unary op that is a method.
    (@front) => {
        TorchFront::FUNCTION_AND_METHOD.with_in_place()
    };
    (@front $front:ident) => {
        match TorchFront::$front {
            front if front.method => front.with_in_place(),
            front => front,
        }
    };
    // The kernel is a type whose `at` is always inlined, not a closure: LLVM inlines a closure
    // into the vectorised loop only when its cost model agrees, and large kernels (erf's pieces,
    // sinh's) stayed a scalar call per element (see `vecmath::ElementFn`).
    (@kernel |$v:ident| $kernel:expr) => {
        struct Kernel;
        impl vecmath::ElementFn for Kernel {
            #[inline(always)]
            fn at(&self, $v: f32) -> f32 {
                $kernel
            }
        }
    };
    (@f32 $x:ident, |$v:ident| $kernel:expr) => {{
        unary_ops!(@kernel |$v| $kernel);
        vecmath::map_f32($x, Kernel)
    }};
    // A kernel type of `vecmath` that runs the common elements without the edges: it computes
    // `kernel`'s float32 function (`vecmath::Ln` is `vecmath::ln`).
    (@f32 $x:ident, |$v:ident| $kernel:expr, split $split:path) => {{
        vecmath::map_f32($x, $split)
    }};
    (@f32 $x:ident, |$v:ident| $kernel:expr, |$lv:ident| $large:expr) => {{
        unary_ops!(@kernel |$v| $kernel);
        vecmath::map_trig($x, Kernel, |$lv: f32| $large)
    }};
    ($(
        $variant:ident {
            name: $name:literal,
            torch_aliases: [$($alias:literal),* $(,)?],
            tf: [$($tf:literal),* $(,)?],
            doc: $doc:literal,
            $(front: $front:ident,)?
            kernel: |$v:ident| $kernel:expr,
            $(large_f32: |$lv:ident| $large:expr,)?
            $(split_f32: $split:path,)?
            ints: $ints:ident $(( |$iv:ident| $ikernel:expr ))?,
            keeps: $keeps:ident,
            grad: |$d:ident, $x:ident, $y:ident, $g:ident| $grad:expr $(,)?
        }
    )*) => {
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub enum UnaryOp {
            $($variant),*
        }

        impl UnaryOp {
            pub const ALL: &'static [UnaryOp] = &[$(UnaryOp::$variant),*];

            pub fn spec(self) -> &'static Spec {
                match self {
                    $(UnaryOp::$variant => &Spec {
                        name: $name,
                        torch_aliases: &[$($alias),*],
                        tf: &[$($tf),*],
                        doc: $doc,
                        differentiable: true,
                        inputs: super::ONE_INPUT,
                        params: &[],
                    }),*
                }
            }

            /// Where torch offers the op (`front: FUNCTIONAL` for `F.silu`; by default `torch.NAME`
            /// and `Tensor.NAME`).
            pub fn torch_front(self) -> TorchFront {
                match self {
                    $(UnaryOp::$variant => unary_ops!(@front $($front)?)),*
                }
            }

            pub fn keeps(self) -> Keeps {
                match self {
                    $(UnaryOp::$variant => Keeps::$keeps),*
                }
            }

            /// Whether the op keeps an integer tensor's dtype or computes in float32.
            pub fn ints(self) -> Ints {
                match self {
                    $(UnaryOp::$variant => Ints::$ints),*
                }
            }
        }

        impl IntegerKernel for i64 {
            fn unary(op: UnaryOp, x: &[i64]) -> Option<Vec<i64>> {
                match op {
                    $(UnaryOp::$variant => integer_arm!(x, i64 $(, $iv, $ikernel)?)),*
                }
            }
        }

        impl IntegerKernel for i32 {
            fn unary(op: UnaryOp, x: &[i32]) -> Option<Vec<i32>> {
                match op {
                    $(UnaryOp::$variant => integer_arm!(x, i32 $(, $iv, $ikernel)?)),*
                }
            }
        }

        impl IntegerKernel for u8 {
            fn unary(op: UnaryOp, x: &[u8]) -> Option<Vec<u8>> {
                match op {
                    $(UnaryOp::$variant => integer_arm!(x, u8 $(, $iv, $ikernel)?)),*
                }
            }
        }

        impl UnaryKernel for f32 {
            fn unary(op: UnaryOp, x: &[f32]) -> Vec<f32> {
                match op {
                    $(UnaryOp::$variant => unary_ops!(@f32 x, |$v| $kernel $(, |$lv| $large)? $(, split $split)?)),*
                }
            }
        }

        /// `op`'s `kernel` at one float32 element, as declared: what the vectorised path (a
        /// `split_f32` kernel type among them) must give within the trig reduction's limit.
        #[cfg(test)]
        pub fn declared_f32(op: UnaryOp, v: f32) -> f32 {
            match op {
                $(UnaryOp::$variant => (|$v: f32| $kernel)(v)),*
            }
        }

        impl UnaryKernel for f64 {
            fn unary(op: UnaryOp, x: &[f64]) -> Vec<f64> {
                match op {
                    $(UnaryOp::$variant => map(x, |$v: f64| $kernel)),*
                }
            }
        }

        /// The gradient of `op`'s input `x`, given its output `y` and the output's gradient `g`.
        #[allow(unused_variables)]
        pub fn rule<D: Differentiator>(
            d: &mut D,
            op: UnaryOp,
            x: &D::Value,
            y: &D::Value,
            g: &D::Value,
        ) -> Result<D::Value> {
            match op {
                $(UnaryOp::$variant => {
                    let ($d, $x, $y, $g) = (&mut *d, x, y, g);
                    $grad
                }),*
            }
        }
    };
}

// Both macros are used where `unary.rs` invokes `unary_ops!`.
pub(super) use {integer_arm, unary_ops};
