//! Images sent with a request: PNG bytes fitted to what every provider takes.
//!
//! Limits (the stricter of the two APIs wins, so one image serves both):
//! - Anthropic rejects an image whose base64 is over 5 MB, or wider or
//!   taller than 8000 px (2000 px when a request holds more than 20 images),
//!   and scales down anything with a long edge over 1568 px before the model
//!   sees it;
//! - OpenAI takes images up to 50 MB per request and fits a `high`-detail
//!   image within 2048 × 2048.
//!
//! So an image is sent with its long edge at most [`MAX_EDGE`] and its bytes
//! at most [`MAX_BYTES`] (base64 of that stays under 5 MB), keeping its
//! aspect ratio; a larger one is downscaled until it fits.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// The longest edge sent, in pixels.
pub const MAX_EDGE: u32 = 1568;
/// The most bytes one image may have (base64 adds a third: under 5 MB).
pub const MAX_BYTES: usize = 3_750_000;

/// A PNG image, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// The PNG's bytes.
    pub png: Arc<[u8]>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// Why bytes cannot be sent as an image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// Not a PNG the decoder can read.
    #[error("not a readable PNG: {0}")]
    NotPng(String),
    /// Could not be brought under the limits.
    #[error("cannot fit within {MAX_EDGE} px and {MAX_BYTES} bytes: {0}")]
    TooLarge(String),
}

impl Image {
    /// The PNG in `bytes` as sent: unchanged when within the limits, else
    /// downscaled (aspect ratio kept) until it is.
    pub fn fit(bytes: &[u8]) -> Result<Self, ImageError> {
        let decoded = image::load_from_memory_with_format(bytes, image::ImageFormat::Png)
            .map_err(|e| ImageError::NotPng(e.to_string()))?;
        let (width, height) = (decoded.width(), decoded.height());
        if width.max(height) <= MAX_EDGE && bytes.len() <= MAX_BYTES {
            return Ok(Self {
                png: Arc::from(bytes),
                width,
                height,
            });
        }
        let mut edge = width.max(height).min(MAX_EDGE);
        for _ in 0..8 {
            let scaled = decoded.resize(edge, edge, image::imageops::FilterType::Triangle);
            let mut out = std::io::Cursor::new(Vec::new());
            scaled
                .write_to(&mut out, image::ImageFormat::Png)
                .map_err(|e| ImageError::TooLarge(e.to_string()))?;
            let out = out.into_inner();
            if out.len() <= MAX_BYTES {
                return Ok(Self {
                    png: Arc::from(out),
                    width: scaled.width(),
                    height: scaled.height(),
                });
            }
            // Bytes shrink roughly with the area: aim a little under.
            let ratio = (MAX_BYTES as f64 / out.len() as f64).sqrt() * 0.9;
            edge = ((f64::from(edge) * ratio) as u32).max(64);
        }
        Err(ImageError::TooLarge(format!("{width}×{height}")))
    }

    /// `data:image/png;base64,…`, as OpenAI-compatible servers take it.
    pub fn data_url(&self) -> String {
        format!("data:image/png;base64,{}", self.base64())
    }

    /// The bytes in standard base64.
    pub fn base64(&self) -> String {
        STANDARD.encode(&self.png)
    }

    /// Input tokens it costs, as Anthropic counts them (width × height ÷ 750);
    /// OpenAI's tile count comes out close.
    pub fn estimated_tokens(&self) -> u64 {
        u64::from(self.width) * u64::from(self.height) / 750
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32, noisy: bool) -> Vec<u8> {
        let img = image::RgbImage::from_fn(width, height, |x, y| {
            if noisy {
                // Noise compresses badly: a large file from a modest size.
                let v = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)).to_le_bytes();
                image::Rgb([v[0], v[1], v[2]])
            } else {
                image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
            }
        });
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
        out.into_inner()
    }

    #[test]
    fn images_are_fitted_to_the_limits_keeping_their_aspect() {
        // (width, height, noisy) → (width, height) sent
        let cases = [
            ((1440, 900, false), (1440, 900)),
            ((390, 844, false), (390, 844)),
            ((3136, 1960, false), (1568, 980)),
            ((1000, 4000, false), (392, 1568)),
        ];
        for ((w, h, noisy), want) in cases {
            let bytes = png(w, h, noisy);
            let fitted = Image::fit(&bytes).unwrap();
            assert_eq!((fitted.width, fitted.height), want, "{w}×{h}");
            assert!(fitted.png.len() <= MAX_BYTES);
            if (w, h) == want {
                assert_eq!(&*fitted.png, bytes.as_slice(), "unchanged when it fits");
            }
        }
        // Too many bytes at an allowed size: downscaled until they fit.
        let heavy = png(1500, 1200, true);
        assert!(heavy.len() > MAX_BYTES, "{}", heavy.len());
        let fitted = Image::fit(&heavy).unwrap();
        assert!(fitted.png.len() <= MAX_BYTES);
        assert!(fitted.width < 1500);
        let aspect = f64::from(fitted.width) / f64::from(fitted.height);
        assert!((aspect - 1.25).abs() < 0.01, "{aspect}");
        assert!(matches!(
            Image::fit(b"not a png"),
            Err(ImageError::NotPng(_))
        ));
    }

    #[test]
    fn data_urls_carry_the_png() {
        let img = Image::fit(&png(2, 1, false)).unwrap();
        let url = img.data_url();
        let b64 = url.strip_prefix("data:image/png;base64,").unwrap();
        assert_eq!(STANDARD.decode(b64).unwrap(), img.png.to_vec());
        assert_eq!(
            Image::fit(&png(1440, 900, false))
                .unwrap()
                .estimated_tokens(),
            1728
        );
    }
}
