//! A generic slice or value seen as float32 when its type is `f32`, for the kernels with a float32
//! path of their own (vectorised special functions, explicit SIMD). Each check is on the type, so
//! it costs nothing once the kernel is compiled for one type.

use std::any::{Any, TypeId};

/// `x` as float32 when `T` is f32.
pub fn as_f32<T: 'static>(x: &[T]) -> Option<&[f32]> {
    if TypeId::of::<T>() != TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: `T` is `f32` (the TypeIds are equal), so the slice already is `&[f32]`.
    Some(unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<f32>(), x.len()) })
}

/// `x` as mutable float32 when `T` is f32.
pub fn as_f32_mut<T: 'static>(x: &mut [T]) -> Option<&mut [f32]> {
    if TypeId::of::<T>() != TypeId::of::<f32>() {
        return None;
    }
    // SAFETY: `T` is `f32` (the TypeIds are equal), so the slice already is `&mut [f32]`; the
    // exclusive borrow of `x` moves into the result.
    Some(unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<f32>(), x.len()) })
}

/// `v` as float32 when `T` is f32.
#[inline(always)]
pub fn to_f32<T: 'static>(v: T) -> Option<f32> {
    (&v as &dyn Any).downcast_ref::<f32>().copied()
}

/// `v` as `T` when `T` is f32 (the inverse of `to_f32`).
#[inline(always)]
pub fn from_f32<T: Copy + 'static>(v: f32) -> Option<T> {
    (&v as &dyn Any).downcast_ref::<T>().copied()
}

/// A float32 vector as `Vec<T>` when `T` is f32.
pub fn vec_from_f32<T: 'static>(v: Vec<f32>) -> Option<Vec<T>> {
    (Box::new(v) as Box<dyn Any>).downcast::<Vec<T>>().ok().map(|v| *v)
}
