//! Client location from a MaxMind-format database (GeoIP2/GeoLite2 City,
//! read with the maintained `maxminddb` crate): a client outside every
//! site's subnets is placed at the site nearest to where the database puts
//! its address, and replicas are ordered by their site's distance to it.

use std::net::IpAddr;
use std::path::Path;

pub(crate) struct Geo {
    reader: maxminddb::Reader<Vec<u8>>,
}

impl Geo {
    pub(crate) fn open(path: &Path) -> Result<Geo, String> {
        let reader = maxminddb::Reader::open_readfile(path)
            .map_err(|e| format!("geoip_db {}: {e}", path.display()))?;
        Ok(Geo { reader })
    }

    /// Where the database puts `ip` (latitude, longitude), if anywhere.
    pub(crate) fn locate(&self, ip: IpAddr) -> Option<(f64, f64)> {
        let found = self.reader.lookup(ip).ok()?;
        let city: maxminddb::geoip2::City = found.decode().ok()??;
        Some((city.location.latitude?, city.location.longitude?))
    }
}

/// Great-circle distance in km between two (latitude, longitude) points.
pub(crate) fn km(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (la1, lo1, la2, lo2) = (
        a.0.to_radians(),
        a.1.to_radians(),
        b.0.to_radians(),
        b.1.to_radians(),
    );
    let h = ((la2 - la1) / 2.0).sin().powi(2)
        + la1.cos() * la2.cos() * ((lo2 - lo1) / 2.0).sin().powi(2);
    2.0 * 6371.0 * h.sqrt().asin()
}

#[cfg(test)]
mod tests {
    #[test]
    fn distances() {
        // Hamburg (DESY) to Tsukuba (KEK): about 8,900 km.
        let d = super::km((53.57, 9.88), (36.15, 140.1));
        assert!((8800.0..9000.0).contains(&d), "{d}");
        assert!(super::km((1.0, 2.0), (1.0, 2.0)) < 1e-9);
    }
}
